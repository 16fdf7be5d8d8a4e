UPDATE segments AS g SET updated_at = $2, finished_at = $2, state = CASE
    WHEN EXISTS (SELECT 1 FROM job_sends AS s WHERE s.job_id = g.job_id
                 AND s.idx >= g.start_idx AND s.idx < g.end_idx AND s.state = 'retry')
    THEN 'partial' ELSE 'done' END
WHERE id = $1
