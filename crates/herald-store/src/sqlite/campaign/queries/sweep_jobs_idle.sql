-- Running jobs with nothing left to do. Pinned to the running-jobs index: by
-- id SQLite would rather walk every job ever created.
SELECT id FROM jobs INDEXED BY jobs_running
WHERE state = 'running' AND retrying = 0 AND NOT EXISTS (
    SELECT 1 FROM segments
    WHERE segments.job_id = jobs.id AND segments.state IN ('pending', 'running'))
LIMIT ?1
