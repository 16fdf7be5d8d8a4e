-- `OFFSET 0`: a probe per running job, as in `jobs::FINISH_IDLE_JOBS`.
SELECT id FROM jobs WHERE id = ANY(ARRAY(
    SELECT id FROM jobs AS j WHERE state = 'running' AND retrying = 0 AND NOT EXISTS (
        SELECT 1 FROM segments AS s
        WHERE s.job_id = j.id AND s.state IN ('pending', 'running') OFFSET 0)
    ORDER BY id LIMIT $1))
AND state = 'running' ORDER BY id FOR NO KEY UPDATE
