-- One index write fewer in every completion (issue 42). Retention found old
-- finished timers through `timers_finished (updated_at, id)`, which every
-- completion entered: a completion changes `state`, so it is never a HOT
-- update, and the new row version went into that index beside the key,
-- state and recipient ones. Dropping it took PostgreSQL from 13.5 to 12.6 µs
-- of CPU a delivered timer in a 1,000,000-timer burst.
--
-- Retention now finds a finished timer in one of two places:
--   - `timers_tenant_state_due`, which every completion writes anyway, by due
--     time: a timer that finished at or after its due time (a delivery, a
--     failure, a late cancel) is old once it is due before the cutoff and
--     changed before it;
--   - this index, for a timer that finished before its due time (a cancel
--     ahead of time, a patch or a node's clock behind another's): sending
--     never puts a timer here, so it costs completions nothing.
-- Between them they hold every finished timer, so what retention removes
-- is the same as before.
CREATE INDEX timers_finished_early ON timers (updated_at, id)
    WHERE state >= 2 AND kind <> 'reminder' AND updated_at < due_at;
DROP INDEX timers_finished;
