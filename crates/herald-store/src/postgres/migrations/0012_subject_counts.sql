-- Counting a subject's subscriptions (issue 15: `GET /v1/subjects`) reads the
-- user and the bit of each of its `reminder_timers` entries: carrying them in
-- the subject index lets the count read the index alone.
DROP INDEX reminder_timers_subject;
CREATE INDEX reminder_timers_subject ON reminder_timers (tenant_id, subject_id)
    INCLUDE (timer_id, user_id, bit);
