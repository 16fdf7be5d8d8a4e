SELECT id FROM jobs WHERE id = ANY(ARRAY(
    SELECT id FROM jobs WHERE state = 'running' AND deadline_at <= $1
    ORDER BY deadline_at, id LIMIT $2))
AND state = 'running' ORDER BY id FOR NO KEY UPDATE
