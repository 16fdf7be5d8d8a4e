-- Audiences, rules, tasks, jobs, segments and the job send log. States are
-- stored by name (`as_str`), except in the send log, which can hold ten million
-- rows per job and stores a one-byte code (`model::send_code`). Ids are
-- AUTOINCREMENT so that none is ever reused: the idempotency key of a recipient
-- is `job-{job_id}-{index}`, and a reused job id would make a provider drop new
-- messages as duplicates of old ones.
CREATE TABLE audiences (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT,
    size       INTEGER,
    created_at INTEGER NOT NULL,
    sealed_at  INTEGER
) STRICT;
-- A chunk's recipients joined by newlines; chunk_no = first index / AUDIENCE_CHUNK.
-- A rowid table: rows are tens of KiB, too big to cluster on the key.
CREATE TABLE audience_chunks (
    audience_id INTEGER NOT NULL,
    chunk_no    INTEGER NOT NULL,
    count       INTEGER NOT NULL,
    data        TEXT    NOT NULL,
    PRIMARY KEY (audience_id, chunk_no)
) STRICT;
CREATE TABLE rules (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    status     TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX rules_enabled ON rules (id) WHERE status = 'enabled';
CREATE TABLE rule_versions (
    rule_id       INTEGER NOT NULL,
    version       INTEGER NOT NULL,
    name          TEXT    NOT NULL,
    schedule      TEXT    NOT NULL,
    audience      TEXT    NOT NULL,
    audience_id   INTEGER,
    channel       TEXT    NOT NULL,
    message       TEXT    NOT NULL,
    deadline_secs INTEGER,
    priority      INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    PRIMARY KEY (rule_id, version)
) STRICT;
CREATE INDEX rule_versions_audience ON rule_versions (audience_id)
    WHERE audience_id IS NOT NULL;
CREATE TABLE tasks (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    rule_id     INTEGER NOT NULL,
    version     INTEGER NOT NULL,
    planned_at  INTEGER NOT NULL,
    state       TEXT    NOT NULL,
    job_id      INTEGER,
    recipients  INTEGER,
    detail      TEXT,
    created_at  INTEGER NOT NULL,
    started_at  INTEGER,
    finished_at INTEGER,
    UNIQUE (rule_id, version, planned_at)
) STRICT;
CREATE INDEX tasks_due ON tasks (planned_at, id) WHERE state = 'pending';
CREATE INDEX tasks_rule ON tasks (rule_id, planned_at, id);
-- A rule's pending and running tasks are two short ranges of this index.
CREATE INDEX tasks_rule_state ON tasks (rule_id, state, version);
CREATE TABLE jobs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    audience_id  INTEGER NOT NULL,
    channel      TEXT    NOT NULL,
    message      TEXT    NOT NULL,
    segment_size INTEGER NOT NULL,
    deadline_at  INTEGER,
    priority     INTEGER NOT NULL,
    task_id      INTEGER,
    state        TEXT    NOT NULL,
    total        INTEGER NOT NULL,
    delivered    INTEGER NOT NULL DEFAULT 0,
    failed       INTEGER NOT NULL DEFAULT 0,
    retrying     INTEGER NOT NULL DEFAULT 0,
    expired      INTEGER NOT NULL DEFAULT 0,
    cancelled    INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL,
    started_at   INTEGER,
    finished_at  INTEGER
) STRICT;
CREATE INDEX jobs_audience ON jobs (audience_id);
CREATE INDEX jobs_running ON jobs (deadline_at) WHERE state = 'running';
-- priority and deadline_at are copied from the job so the claim reads this
-- table alone; handled marks a partial segment the sweeper has dealt with.
CREATE TABLE segments (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id      INTEGER NOT NULL,
    start_idx   INTEGER NOT NULL,
    end_idx     INTEGER NOT NULL,
    cursor      INTEGER NOT NULL,
    state       TEXT    NOT NULL,
    owner       TEXT,
    lease_until INTEGER,
    epoch       INTEGER NOT NULL,
    parent_id   INTEGER,
    attempt     INTEGER NOT NULL,
    not_before  INTEGER NOT NULL,
    priority    INTEGER NOT NULL,
    deadline_at INTEGER,
    handled     INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX segments_job ON segments (job_id);
CREATE INDEX segments_job_state ON segments (job_id, state);
-- Claim order; not_before and deadline_at ride along so segments waiting
-- out a backoff or past their deadline are skipped without a table lookup.
CREATE INDEX segments_claim ON segments (priority DESC, id, not_before, deadline_at)
    WHERE state = 'pending';
CREATE INDEX segments_lease ON segments (lease_until) WHERE state = 'running';
CREATE INDEX segments_partial ON segments (id) WHERE state = 'partial' AND handled = 0;
CREATE TABLE job_sends (
    job_id     INTEGER NOT NULL,
    idx        INTEGER NOT NULL,
    recipient  TEXT    NOT NULL,
    state      INTEGER NOT NULL,
    attempts   INTEGER NOT NULL,
    msgid      TEXT,
    error      TEXT,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (job_id, idx)
) STRICT, WITHOUT ROWID;
-- Only retry rows (code 1) enter it: inserting delivered rows costs nothing here.
CREATE INDEX job_sends_retry ON job_sends (job_id, idx) WHERE state = 1;
