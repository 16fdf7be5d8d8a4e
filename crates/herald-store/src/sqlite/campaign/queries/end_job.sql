-- Ends a running job in state ?2. Ending `expired` or `cancelled` puts every
-- recipient without a final outcome (unsent or retrying) in that bucket; the
-- right-hand sides all read the row as it was.
-- RETURNING takes the job columns (`model::job_cols!`): jobs.rs appends them.
UPDATE jobs SET state = ?2, finished_at = ?3,
    expired = CASE WHEN ?2 = 'expired' THEN total - delivered - failed - cancelled - in_doubt
                   ELSE expired END,
    cancelled = CASE WHEN ?2 = 'cancelled' THEN total - delivered - failed - expired - in_doubt
                     ELSE cancelled END,
    retrying = CASE WHEN ?2 IN ('expired', 'cancelled') THEN 0 ELSE retrying END
WHERE id = ?1 AND state = 'running' RETURNING
