-- Tenants (issue 13): every stored object belongs to one. Rows written
-- before this migration belong to tenant 1, `default`. Ids stay global;
-- natural keys become unique per tenant: idempotency keys, subject ids,
-- user ids. The tables mirror SQLite's.
--
-- Adding a column with a constant default rewrites no row (PostgreSQL 11+).
-- Primary keys that gain the tenant are rebuilt under their old names, and
-- `timers_pending_due` gains the tenant among its included columns so the
-- loader still reads the index alone.
CREATE TABLE tenants (
    id         SERIAL PRIMARY KEY,
    name       TEXT COLLATE "C" NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);
INSERT INTO tenants (id, name, created_at)
    VALUES (1, 'default', (extract(epoch FROM now()) * 1000)::bigint);
SELECT setval(pg_get_serial_sequence('tenants', 'id'), 1);

-- Timers: the key is unique per tenant. Key first in the index, so a lookup
-- by keys alone (`= ANY`) can use it; the tenant then picks among few rows.
ALTER TABLE timers ADD COLUMN tenant_id INTEGER NOT NULL DEFAULT 1;
DROP INDEX timers_idempotency_key;
CREATE UNIQUE INDEX timers_idempotency_key ON timers (idempotency_key, tenant_id)
    WHERE idempotency_key IS NOT NULL;
DROP INDEX timers_pending_due;
CREATE INDEX timers_pending_due ON timers (due_at, id) INCLUDE (shard, priority, tenant_id)
    WHERE state = 0;
ALTER TABLE deliveries ADD COLUMN tenant_id INTEGER NOT NULL DEFAULT 1;

-- Subjects and subscriptions, re-keyed by tenant.
ALTER TABLE subjects ADD COLUMN tenant_id INTEGER NOT NULL DEFAULT 1;
ALTER TABLE subjects DROP CONSTRAINT subjects_pkey,
    ADD CONSTRAINT subjects_pkey PRIMARY KEY (tenant_id, subject_id);
ALTER TABLE reminders ADD COLUMN tenant_id INTEGER NOT NULL DEFAULT 1;
ALTER TABLE reminders DROP CONSTRAINT reminders_pkey,
    ADD CONSTRAINT reminders_pkey PRIMARY KEY (tenant_id, user_id, subject_id);
ALTER TABLE reminder_timers ADD COLUMN tenant_id INTEGER NOT NULL DEFAULT 1;
ALTER TABLE reminder_timers DROP CONSTRAINT reminder_timers_pkey,
    ADD CONSTRAINT reminder_timers_pkey PRIMARY KEY (tenant_id, user_id, subject_id, bit);
DROP INDEX reminder_timers_subject;
CREATE INDEX reminder_timers_subject ON reminder_timers (tenant_id, subject_id)
    INCLUDE (timer_id);

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
    id         BIGSERIAL PRIMARY KEY,
    tenant_id  INTEGER NOT NULL,
    name       TEXT,
    scopes     TEXT    NOT NULL,
    hash       BYTEA   NOT NULL,
    created_at BIGINT  NOT NULL,
    expires_at BIGINT,
    revoked_at BIGINT
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id, id);

-- The audit log, read by time: one tenant's, or everyone's.
CREATE TABLE audit_log (
    id          BIGSERIAL PRIMARY KEY,
    at          BIGINT   NOT NULL,
    key_id      BIGINT,
    key_name    TEXT,
    tenant_id   INTEGER  NOT NULL,
    method      TEXT     NOT NULL,
    route       TEXT     NOT NULL,
    resource_id TEXT,
    status      INTEGER  NOT NULL
);
CREATE INDEX audit_log_tenant ON audit_log (tenant_id, at, id);
CREATE INDEX audit_log_at ON audit_log (at, id);
