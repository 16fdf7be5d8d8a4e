UPDATE segments SET handled = true WHERE id IN (
    SELECT id FROM segments
    WHERE job_id = ANY($1::int8[]) AND state = 'partial' AND NOT handled
    ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)
RETURNING id, job_id, start_idx, end_idx, cursor_idx, attempt, priority, deadline_at, tenant_id,
    0::int8
