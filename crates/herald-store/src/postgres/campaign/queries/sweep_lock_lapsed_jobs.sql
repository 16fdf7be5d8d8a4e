SELECT id, state FROM jobs WHERE id = ANY(ARRAY(
    SELECT job_id FROM segments WHERE state = 'running' AND lease_until < $1
    ORDER BY lease_until, id LIMIT $2))
ORDER BY id FOR NO KEY UPDATE
