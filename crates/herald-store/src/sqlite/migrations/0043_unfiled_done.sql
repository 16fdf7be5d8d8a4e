-- The unfiled timers that have finished, by state (issue 42): what the
-- dead-letter views, retries and a subject's failure count read besides the
-- filed ones (migration 0042), without reading the whole backlog when the
-- filer is behind. A new timer is pending and does not enter it; a
-- completion adds it next to the others of its moment, and filing takes it
-- out. `IF NOT EXISTS`: main at 5795c97 and e896924 created it in 0042
-- itself.
CREATE INDEX IF NOT EXISTS timers_unfiled_done ON timers (tenant_id, state, due_at)
    WHERE filed = 0 AND state >= 2;
