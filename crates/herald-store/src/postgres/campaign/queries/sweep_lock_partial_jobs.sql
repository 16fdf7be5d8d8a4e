SELECT id, state FROM jobs WHERE id = ANY(ARRAY(
    SELECT job_id FROM segments WHERE state = 'partial' AND NOT handled
    ORDER BY id LIMIT $1))
ORDER BY id FOR NO KEY UPDATE
