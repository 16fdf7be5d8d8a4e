-- Campaigns (see `campaign/mod.rs`): audiences in chunks, versioned rules,
-- append-only tasks, jobs with exact counters, segments and the job send log.
-- States are the `as_str()` names of the herald-core enums. Index columns are
-- named `*_idx` (`end` is a reserved word). Every hot path has its index: the
-- claim walks `segments_claim` (pending only, priority first, carrying what
-- the claim filters on), the sweeper `segments_lease`, `segments_partial` and
-- the running-job indexes, retry lookups `job_sends_retry`; nothing on them
-- scans a table. `segments_lease` also requires a lease: the sweeper's
-- `lease_until < now` implies it, a lookup of one running segment by id does
-- not, so that one cannot wander into it (see `campaign/plans.rs`).
CREATE TABLE audiences (
    id         BIGSERIAL PRIMARY KEY,
    name       TEXT,
    size       BIGINT,
    created_at BIGINT NOT NULL,
    sealed_at  BIGINT
);
CREATE TABLE audience_chunks (
    audience_id BIGINT  NOT NULL,
    chunk_no    BIGINT  NOT NULL,
    count       INTEGER NOT NULL,
    data        BYTEA   NOT NULL,
    PRIMARY KEY (audience_id, chunk_no)
);
CREATE TABLE rules (
    id         BIGSERIAL PRIMARY KEY,
    status     TEXT COLLATE "C" NOT NULL,
    version    INTEGER NOT NULL,
    created_at BIGINT  NOT NULL,
    updated_at BIGINT  NOT NULL
);
CREATE INDEX rules_enabled ON rules (id) WHERE status = 'enabled';
CREATE TABLE rule_versions (
    rule_id       BIGINT   NOT NULL,
    version       INTEGER  NOT NULL,
    name          TEXT     NOT NULL,
    schedule      TEXT     NOT NULL,
    audience      TEXT     NOT NULL,
    audience_id   BIGINT,
    channel       TEXT     NOT NULL,
    message       TEXT     NOT NULL,
    deadline_secs BIGINT,
    priority      SMALLINT NOT NULL,
    created_at    BIGINT   NOT NULL,
    PRIMARY KEY (rule_id, version)
);
CREATE INDEX rule_versions_audience ON rule_versions (audience_id)
    WHERE audience_id IS NOT NULL;
CREATE TABLE tasks (
    id          BIGSERIAL PRIMARY KEY,
    rule_id     BIGINT  NOT NULL,
    version     INTEGER NOT NULL,
    planned_at  BIGINT  NOT NULL,
    state       TEXT COLLATE "C" NOT NULL,
    job_id      BIGINT,
    recipients  BIGINT,
    detail      TEXT,
    created_at  BIGINT  NOT NULL,
    started_at  BIGINT,
    finished_at BIGINT,
    UNIQUE (rule_id, version, planned_at)
);
CREATE INDEX tasks_due ON tasks (planned_at, id) WHERE state = 'pending';
CREATE INDEX tasks_rule ON tasks (rule_id, planned_at DESC, id DESC);
CREATE INDEX tasks_active ON tasks (rule_id) WHERE state IN ('pending', 'running');
CREATE TABLE jobs (
    id           BIGSERIAL PRIMARY KEY,
    audience_id  BIGINT   NOT NULL,
    channel      TEXT     NOT NULL,
    message      TEXT     NOT NULL,
    segment_size BIGINT   NOT NULL,
    deadline_at  BIGINT,
    priority     SMALLINT NOT NULL,
    task_id      BIGINT,
    state        TEXT COLLATE "C" NOT NULL,
    total        BIGINT   NOT NULL,
    delivered    BIGINT   NOT NULL DEFAULT 0,
    failed       BIGINT   NOT NULL DEFAULT 0,
    retrying     BIGINT   NOT NULL DEFAULT 0,
    expired      BIGINT   NOT NULL DEFAULT 0,
    cancelled    BIGINT   NOT NULL DEFAULT 0,
    created_at   BIGINT   NOT NULL,
    started_at   BIGINT,
    finished_at  BIGINT
);
CREATE INDEX jobs_audience ON jobs (audience_id);
CREATE INDEX jobs_running ON jobs (id) WHERE state = 'running';
CREATE INDEX jobs_running_deadline ON jobs (deadline_at, id)
    WHERE state = 'running' AND deadline_at IS NOT NULL;
CREATE TABLE segments (
    id          BIGSERIAL PRIMARY KEY,
    job_id      BIGINT   NOT NULL,
    start_idx   BIGINT   NOT NULL,
    end_idx     BIGINT   NOT NULL,
    cursor_idx  BIGINT   NOT NULL,
    state       TEXT COLLATE "C" NOT NULL,
    owner       TEXT COLLATE "C",
    lease_until BIGINT,
    epoch       BIGINT   NOT NULL DEFAULT 0,
    parent_id   BIGINT,
    attempt     INTEGER  NOT NULL,
    not_before  BIGINT   NOT NULL,
    priority    SMALLINT NOT NULL,
    deadline_at BIGINT,
    handled     BOOLEAN  NOT NULL DEFAULT false,
    created_at  BIGINT   NOT NULL,
    updated_at  BIGINT   NOT NULL
);
CREATE INDEX segments_claim ON segments (priority DESC, id) INCLUDE (not_before, deadline_at)
    WHERE state = 'pending';
CREATE INDEX segments_job ON segments (job_id, id);
CREATE INDEX segments_active ON segments (job_id) WHERE state IN ('pending', 'running');
CREATE INDEX segments_lease ON segments (lease_until, id)
    WHERE state = 'running' AND lease_until IS NOT NULL;
CREATE INDEX segments_partial ON segments (id) WHERE state = 'partial' AND NOT handled;
CREATE TABLE job_sends (
    job_id     BIGINT  NOT NULL,
    idx        BIGINT  NOT NULL,
    recipient  TEXT    NOT NULL,
    state      TEXT COLLATE "C" NOT NULL,
    attempts   INTEGER NOT NULL,
    msgid      TEXT,
    error      TEXT,
    updated_at BIGINT  NOT NULL,
    PRIMARY KEY (job_id, idx)
);
CREATE INDEX job_sends_retry ON job_sends (job_id, idx) WHERE state = 'retry';
