-- Ends those of the (locked) jobs `$1` that have nothing left to do.
--
-- `OFFSET 0` keeps PostgreSQL from turning the `NOT EXISTS` into an anti-join:
-- it stays a probe of `segments_active` per job. As a join, a plan cached
-- while the tables were small reads every active segment of every job.
--
-- The job ends no earlier than its last segment: two workers' segment ends
-- can commit out of the order of their clocks, and the one that finds the
-- job idle may hold the earlier time.
UPDATE jobs AS j SET state = 'done', finished_at = GREATEST($2, (
    SELECT max(s.finished_at) FROM segments AS s WHERE s.job_id = j.id))
WHERE id = ANY($1::int8[]) AND state = 'running' AND retrying = 0 AND NOT EXISTS (
    SELECT 1 FROM segments AS s WHERE s.job_id = j.id AND s.state IN ('pending', 'running')
    OFFSET 0)
RETURNING id, task_id, delivered, failed + in_doubt, expired
