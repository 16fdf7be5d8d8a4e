-- $1 tenant, $2 user, $3 subject, $4 bits to clear, $5 at.
-- `subject_id || ''` keeps the subject index out: without statistics (right
-- after a bulk subscribe) the planner finds (tenant, subject) as selective as
-- the user's key and would walk every link of a hot subject. A user's own
-- links are few, so the primary key's (tenant, user) range is the way in.
WITH links AS (
    DELETE FROM reminder_timers
    WHERE tenant_id = $1 AND user_id = $2 AND subject_id || '' = $3
      AND bit = ANY($4::int2[])
    RETURNING timer_id
)
UPDATE timers SET state = 4, updated_at = $5
WHERE id = ANY(ARRAY(SELECT timer_id FROM links)) AND state = 0 RETURNING id
