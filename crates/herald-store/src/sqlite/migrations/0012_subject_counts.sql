-- Counting a subject's subscriptions (issue 15: `GET /v1/subjects`) reads the
-- user and the bit of each of its `reminder_timers` entries. On SQLite the
-- subject index already holds them: `reminder_timers` is WITHOUT ROWID, so
-- every index entry carries the primary key. Nothing to change; the number
-- keeps both backends at the same schema version.
SELECT 1;
