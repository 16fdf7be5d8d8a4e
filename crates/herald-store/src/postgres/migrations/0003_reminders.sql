-- Subjects and reminder subscriptions (see `reminders.rs`). A set bit of
-- `reminders.bits` has exactly one `reminder_timers` row, whose primary key is
-- what makes two nodes adding the same bit at once create one timer.
-- `reminder_timers_subject` serves moving and deleting a subject.
CREATE TABLE subjects (
    subject_id TEXT COLLATE "C" PRIMARY KEY,
    start_at   BIGINT NOT NULL,
    title      TEXT,
    data       TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE TABLE reminders (
    user_id    TEXT COLLATE "C" NOT NULL,
    subject_id TEXT COLLATE "C" NOT NULL,
    bits       BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, subject_id)
);
CREATE TABLE reminder_timers (
    user_id    TEXT COLLATE "C" NOT NULL,
    subject_id TEXT COLLATE "C" NOT NULL,
    bit        SMALLINT NOT NULL,
    timer_id   BIGINT NOT NULL,
    PRIMARY KEY (user_id, subject_id, bit)
);
CREATE INDEX reminder_timers_subject ON reminder_timers (subject_id) INCLUDE (timer_id);
