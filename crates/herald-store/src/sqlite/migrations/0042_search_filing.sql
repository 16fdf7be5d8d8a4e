-- Timers reach the search indexes in the background (issue 42).
--
-- The three search indexes (a tenant's timers, by state, by recipient) cost
-- a timer's insert more than everything else it writes: a recipient is a
-- scattered key, so each insert dirtied a page of its own in the recipient
-- index. They now hold only timers that are `filed`. A new timer is written
-- unfiled, into `timers_pending_due` and the short `timers_unfiled` (ids only,
-- so each insert appends at its end), and the store's filer sets `filed` on
-- batches of them in id order when the writer has time: many rows a page.
-- Searches read the filed timers through the search indexes and the unfiled
-- ones (a few seconds of ingest at most) through `timers_unfiled`, and merge
-- the two in `(due_at, id)` order. `filed` never goes back to 0.
--
-- Rows stored before this migration are filed (the column's default), so
-- the new partial indexes hold what the old ones held.
ALTER TABLE timers ADD COLUMN filed INTEGER NOT NULL DEFAULT 1;
DROP INDEX timers_tenant_due;
DROP INDEX timers_tenant_state_due;
DROP INDEX timers_tenant_recipient_due;
CREATE INDEX timers_tenant_due ON timers (tenant_id, due_at) WHERE filed = 1;
CREATE INDEX timers_tenant_state_due ON timers (tenant_id, state, due_at) WHERE filed = 1;
CREATE INDEX timers_tenant_recipient_due ON timers (tenant_id, recipient, due_at)
    WHERE filed = 1;
CREATE INDEX timers_unfiled ON timers (id) WHERE filed = 0;
