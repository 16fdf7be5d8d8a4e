-- Follow-ups of rules and resends to the unread (issue 39 §5).
--
-- A rule version may carry a follow-up to the unread, as a job does: every
-- job it starts gets it. NULL for a version without one (and both set
-- together for one with it).
ALTER TABLE rule_versions ADD COLUMN follow_up_after_ms BIGINT;
ALTER TABLE rule_versions ADD COLUMN follow_up_message TEXT;
-- The job a job follows: the one whose follow-up (or route step) it sends,
-- or whose unread recipients an operator resent to. The index lists a job's
-- followers and tells whether one of them still sends.
ALTER TABLE jobs ADD COLUMN follows BIGINT;
CREATE INDEX jobs_follows ON jobs (follows, id) WHERE follows IS NOT NULL;
UPDATE jobs SET follows = (SELECT f.job_id FROM job_follow_ups AS f
    WHERE f.follow_up_job_id = jobs.id)
WHERE id IN (SELECT follow_up_job_id FROM job_follow_ups WHERE follow_up_job_id IS NOT NULL);
-- When the job last recorded an attempt's outcome (delivered, failed, to be
-- retried), set with the totals. Jobs from before this migration take the
-- last time a segment of theirs moved its cursor past a recipient (close:
-- a segment's later change, such as its end, may be a little later).
ALTER TABLE jobs ADD COLUMN last_sent_at BIGINT;
UPDATE jobs SET last_sent_at = (SELECT MAX(s.updated_at) FROM segments AS s
    WHERE s.job_id = jobs.id AND s.cursor_idx > s.start_idx)
WHERE started_at IS NOT NULL;
