-- Subjects and reminder subscriptions. WITHOUT ROWID keeps each table in its
-- primary-key order, so a user's subscriptions are adjacent: `user_reminders`
-- and the merge probes (`pending_reminders`) read one contiguous range.
-- `reminder_timers_subject` carries the timer id so moving or deleting a
-- subject reads the index alone.
CREATE TABLE subjects (
    subject_id TEXT    PRIMARY KEY,
    start_at   INTEGER NOT NULL,
    title      TEXT,
    data       TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE TABLE reminders (
    user_id    TEXT    NOT NULL,
    subject_id TEXT    NOT NULL,
    bits       INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, subject_id)
) STRICT, WITHOUT ROWID;
CREATE TABLE reminder_timers (
    user_id    TEXT    NOT NULL,
    subject_id TEXT    NOT NULL,
    bit        INTEGER NOT NULL,
    timer_id   INTEGER NOT NULL,
    PRIMARY KEY (user_id, subject_id, bit)
) STRICT, WITHOUT ROWID;
CREATE INDEX reminder_timers_subject ON reminder_timers (subject_id, timer_id);
