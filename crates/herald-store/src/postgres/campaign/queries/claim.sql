-- The first pending segment by (priority DESC, id) that may run now, skipping
-- those other claimers hold; then the guarded update, which hits that row.
-- Sent unnamed (`query_typed`), so it is planned afresh each time: a generic
-- plan cached while `segments` was small sorts every pending segment (and
-- joins the update through them) instead of walking `segments_claim` to the
-- first one. Claims are one per segment, so the planning is cheap.
-- $4 raises `sent_to` ahead of the cursor (0: left alone).
-- RETURNING takes the segment columns (`model::segment_cols!`): jobs.rs
-- appends them.
WITH c AS (
    SELECT id AS cid FROM segments
    WHERE state = 'pending' AND not_before <= $2 AND (deadline_at IS NULL OR deadline_at > $2)
    ORDER BY priority DESC, id LIMIT 1 FOR UPDATE SKIP LOCKED
)
UPDATE segments SET state = 'running', owner = $1, lease_until = $3, epoch = epoch + 1,
    updated_at = $2,
    sent_to = CASE WHEN $4 > 0 THEN LEAST(GREATEST(sent_to, cursor_idx + $4), end_idx)
        ELSE sent_to END
FROM c WHERE id = c.cid AND state = 'pending' RETURNING
