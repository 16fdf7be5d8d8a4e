-- Every recipient without a final outcome (retrying ones included) expired.
-- A job whose recipients all have one already is simply done.
UPDATE jobs SET
    state = CASE WHEN total - delivered - failed - expired = 0 THEN 'done'
                 ELSE 'expired' END,
    expired = total - delivered - failed, retrying = 0, finished_at = $2
WHERE id = ANY($1::int8[]) RETURNING id, task_id, delivered, failed, expired, state
