-- Timers, the timer send log and meta. The tables mirror SQLite's.
--
-- State codes are `TimerState::code()`: 0 pending, 2 done, 3 failed,
-- 4 cancelled, 5 dead. Timer ids come from a sequence and are never reused
-- (`herald-timer-{id}` is the delivery key of timers without an idempotency
-- key). Times are unix milliseconds in BIGINT. Shards are INTEGER because a
-- u16 does not fit a SMALLINT. Keys, node ids and lease names use the "C"
-- collation: byte order, as in SQLite, whatever the database's default
-- collation is, and cheaper comparisons.
--
-- `timers_pending_due` carries `shard` and `priority` so that `load_due` can be
-- answered from the index alone once the table is vacuumed.
CREATE TABLE timers (
    id              BIGSERIAL PRIMARY KEY,
    shard           INTEGER  NOT NULL,
    due_at          BIGINT   NOT NULL,
    priority        SMALLINT NOT NULL,
    kind            TEXT     NOT NULL,
    state           SMALLINT NOT NULL,
    channel         TEXT     NOT NULL,
    recipient       TEXT     NOT NULL,
    message         TEXT     NOT NULL,
    idempotency_key TEXT COLLATE "C",
    attempts        BIGINT   NOT NULL DEFAULT 0,
    last_error      TEXT,
    created_at      BIGINT   NOT NULL,
    updated_at      BIGINT   NOT NULL,
    delivered_at    BIGINT
);
CREATE INDEX timers_pending_due ON timers (due_at, id) INCLUDE (shard, priority)
    WHERE state = 0;
CREATE UNIQUE INDEX timers_idempotency_key ON timers (idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE TABLE deliveries (
    id              BIGSERIAL PRIMARY KEY,
    timer_id        BIGINT NOT NULL,
    attempt         BIGINT NOT NULL,
    channel         TEXT   NOT NULL,
    outcome         TEXT   NOT NULL,
    idempotency_key TEXT   NOT NULL,
    provider_msgid  TEXT,
    status          BIGINT,
    error           TEXT,
    started_at      BIGINT NOT NULL,
    finished_at     BIGINT NOT NULL
);
CREATE INDEX deliveries_timer ON deliveries (timer_id, id);
CREATE TABLE meta (
    key   TEXT COLLATE "C" PRIMARY KEY,
    value TEXT NOT NULL
);
