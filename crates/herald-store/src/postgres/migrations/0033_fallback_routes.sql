-- Fallback routes (issue 39 §2): the send log keeps which step of a timer's
-- route each attempt was (null for a timer without a route). On the
-- partitioned parent, so every partition has it.
ALTER TABLE deliveries ADD COLUMN step BIGINT;
-- A job's follow-up may be the next step of its route: which step (null for
-- a follow-up to the unread).
ALTER TABLE job_follow_ups ADD COLUMN step BIGINT;
