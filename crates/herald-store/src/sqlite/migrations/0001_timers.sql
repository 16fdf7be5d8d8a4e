-- Timers, the timer send log and meta.
--
-- State codes are `TimerState::code()`: 0 pending, 2 done, 3 failed,
-- 4 cancelled, 5 dead. `timers.id` is AUTOINCREMENT so an id is never reused
-- even if old rows are purged one day: `herald-timer-{id}` is the delivery key
-- of timers without an idempotency key, and a reused id would make providers
-- drop a new message as a duplicate of an old one.
CREATE TABLE timers (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    shard           INTEGER NOT NULL,
    due_at          INTEGER NOT NULL,
    priority        INTEGER NOT NULL,
    kind            TEXT    NOT NULL,
    state           INTEGER NOT NULL,
    channel         TEXT    NOT NULL,
    recipient       TEXT    NOT NULL,
    message         TEXT    NOT NULL,
    idempotency_key TEXT,
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    delivered_at    INTEGER
) STRICT;
CREATE INDEX timers_pending_due ON timers (due_at, id) WHERE state = 0;
CREATE UNIQUE INDEX timers_idempotency_key ON timers (idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE TABLE deliveries (
    id              INTEGER PRIMARY KEY,
    timer_id        INTEGER NOT NULL,
    attempt         INTEGER NOT NULL,
    channel         TEXT    NOT NULL,
    outcome         TEXT    NOT NULL,
    idempotency_key TEXT    NOT NULL,
    provider_msgid  TEXT,
    status          INTEGER,
    error           TEXT,
    started_at      INTEGER NOT NULL,
    finished_at     INTEGER NOT NULL
) STRICT;
CREATE INDEX deliveries_timer ON deliveries (timer_id);
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT, WITHOUT ROWID;
