-- $1 tenant, $2 subject, $3 at. Unlinks every bit of the subject, deletes the
-- users' subscriptions (found through the links) and cancels the pending timers.
WITH links AS (
    DELETE FROM reminder_timers WHERE tenant_id = $1 AND subject_id = $2
    RETURNING user_id, timer_id
), subs AS (
    DELETE FROM reminders
    WHERE tenant_id = $1 AND subject_id = $2
      AND user_id = ANY(ARRAY(SELECT user_id FROM links))
)
UPDATE timers SET state = 4, updated_at = $3
WHERE id = ANY(ARRAY(SELECT timer_id FROM links)) AND state = 0 RETURNING id
