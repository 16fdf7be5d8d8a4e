-- Every recipient without a final outcome (retrying ones included) expired.
-- A job whose recipients all have one already is simply done. In-doubt
-- recipients count as failed for the task's outcome.
UPDATE jobs SET
    state = CASE WHEN total - delivered - failed - expired - in_doubt = 0 THEN 'done'
                 ELSE 'expired' END,
    expired = total - delivered - failed - in_doubt, retrying = 0, finished_at = $2
WHERE id = ANY($1::int8[]) RETURNING id, task_id, delivered, failed + in_doubt, expired, state
