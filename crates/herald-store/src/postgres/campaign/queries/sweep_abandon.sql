UPDATE segments SET state = 'abandoned', updated_at = $2, finished_at = $2 WHERE id IN (
    SELECT id FROM segments
    WHERE job_id = ANY($1::int8[]) AND state = 'running' AND lease_until < $2
    ORDER BY lease_until, id LIMIT $3 FOR UPDATE SKIP LOCKED)
RETURNING id, job_id, start_idx, end_idx, cursor_idx, attempt, priority, deadline_at, tenant_id,
    GREATEST(sent_to, doubt_to)
