-- $1 user, $2 subject, $3 bits to clear, $4 at.
WITH links AS (
    DELETE FROM reminder_timers
    WHERE user_id = $1 AND subject_id = $2 AND bit = ANY($3::int2[]) RETURNING timer_id
)
UPDATE timers SET state = 4, updated_at = $4
WHERE id = ANY(ARRAY(SELECT timer_id FROM links)) AND state = 0 RETURNING id
