-- Tenants (issue 13): every stored object belongs to one. Rows written
-- before this migration belong to tenant 1, `default`. Ids (timers,
-- audiences, rules, tasks, jobs, segments, deliveries) stay global; natural
-- keys become unique per tenant: idempotency keys, subject ids, user ids.
--
-- Adding a column with a constant default rewrites no row. The tables keyed
-- by a natural key are WITHOUT ROWID, clustered on that key, so they are
-- rebuilt with the tenant in front of it (create, copy, drop, rename).
CREATE TABLE tenants (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT    NOT NULL UNIQUE,
    created_at INTEGER NOT NULL
) STRICT;
INSERT INTO tenants (id, name, created_at)
    VALUES (1, 'default', CAST(strftime('%s', 'now') AS INTEGER) * 1000);

-- Timers: the key is unique per tenant. Key first in the index, so a lookup
-- by key alone (the tenant then picks among few rows) can use it too.
ALTER TABLE timers ADD COLUMN tenant_id INTEGER NOT NULL DEFAULT 1;
DROP INDEX timers_idempotency_key;
CREATE UNIQUE INDEX timers_idempotency_key ON timers (idempotency_key, tenant_id)
    WHERE idempotency_key IS NOT NULL;
ALTER TABLE deliveries ADD COLUMN tenant_id INTEGER NOT NULL DEFAULT 1;

-- Subjects and subscriptions, re-keyed by tenant.
CREATE TABLE subjects_t (
    tenant_id  INTEGER NOT NULL,
    subject_id TEXT    NOT NULL,
    start_at   INTEGER NOT NULL,
    title      TEXT,
    data       TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, subject_id)
) STRICT, WITHOUT ROWID;
INSERT INTO subjects_t (tenant_id, subject_id, start_at, title, data, created_at, updated_at)
    SELECT 1, subject_id, start_at, title, data, created_at, updated_at FROM subjects;
DROP TABLE subjects;
ALTER TABLE subjects_t RENAME TO subjects;

CREATE TABLE reminders_t (
    tenant_id  INTEGER NOT NULL,
    user_id    TEXT    NOT NULL,
    subject_id TEXT    NOT NULL,
    bits       INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, user_id, subject_id)
) STRICT, WITHOUT ROWID;
INSERT INTO reminders_t (tenant_id, user_id, subject_id, bits, created_at, updated_at)
    SELECT 1, user_id, subject_id, bits, created_at, updated_at FROM reminders;
DROP TABLE reminders;
ALTER TABLE reminders_t RENAME TO reminders;

CREATE TABLE reminder_timers_t (
    tenant_id  INTEGER NOT NULL,
    user_id    TEXT    NOT NULL,
    subject_id TEXT    NOT NULL,
    bit        INTEGER NOT NULL,
    timer_id   INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, user_id, subject_id, bit)
) STRICT, WITHOUT ROWID;
INSERT INTO reminder_timers_t (tenant_id, user_id, subject_id, bit, timer_id)
    SELECT 1, user_id, subject_id, bit, timer_id FROM reminder_timers;
DROP TABLE reminder_timers;
ALTER TABLE reminder_timers_t RENAME TO reminder_timers;
CREATE INDEX reminder_timers_subject ON reminder_timers (tenant_id, subject_id, timer_id);

-- Campaigns. Child rows (versions, tasks, segments, sends) carry their
-- parent's tenant, so a check never needs a join. Lists go by tenant.
ALTER TABLE audiences ADD COLUMN tenant_id INTEGER NOT NULL DEFAULT 1;
ALTER TABLE rules ADD COLUMN tenant_id INTEGER NOT NULL DEFAULT 1;
CREATE INDEX rules_tenant ON rules (tenant_id, id);
ALTER TABLE rule_versions ADD COLUMN tenant_id INTEGER NOT NULL DEFAULT 1;
ALTER TABLE tasks ADD COLUMN tenant_id INTEGER NOT NULL DEFAULT 1;
ALTER TABLE jobs ADD COLUMN tenant_id INTEGER NOT NULL DEFAULT 1;
CREATE INDEX jobs_tenant ON jobs (tenant_id, id);
ALTER TABLE segments ADD COLUMN tenant_id INTEGER NOT NULL DEFAULT 1;
ALTER TABLE job_sends ADD COLUMN tenant_id INTEGER NOT NULL DEFAULT 1;

-- API keys: only the SHA-256 of a key is kept. Scopes are space-separated.
CREATE TABLE api_keys (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id  INTEGER NOT NULL,
    name       TEXT,
    scopes     TEXT    NOT NULL,
    hash       BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    revoked_at INTEGER
) STRICT;
CREATE INDEX api_keys_tenant ON api_keys (tenant_id, id);

-- The audit log, read by time: one tenant's, or everyone's.
CREATE TABLE audit_log (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          INTEGER NOT NULL,
    key_id      INTEGER,
    key_name    TEXT,
    tenant_id   INTEGER NOT NULL,
    method      TEXT    NOT NULL,
    route       TEXT    NOT NULL,
    resource_id TEXT,
    status      INTEGER NOT NULL
) STRICT;
CREATE INDEX audit_log_tenant ON audit_log (tenant_id, at, id);
CREATE INDEX audit_log_at ON audit_log (at, id);
