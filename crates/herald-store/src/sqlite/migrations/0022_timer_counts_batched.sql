-- New timers are counted per write batch, not per row (issue 17). The row
-- trigger of migration 0020 ran an upsert for every inserted timer, which
-- took bulk ingest from about 157,000 to 92,000 timers a second. Every
-- insert into `timers` now goes through the store's write batch, which adds
-- the pending timers it inserted to `timer_counts` in one statement per
-- tenant, in the same transaction, before it commits (`sqlite/timers.rs`,
-- `TimerInserts`). Changes of state and deletes keep their row triggers: a
-- completion batch already writes each row it changes, and the drain showed
-- no cost.
--
-- A batch may change a timer it inserted itself (a reminder set and then
-- cancelled in one batch) before its inserts are counted, so the pending
-- count can be briefly missing or below zero inside the transaction: the
-- triggers now take one off with an upsert rather than an update of a row
-- that may not be there yet. Readers only ever see committed totals.
DROP TRIGGER timer_counts_insert;
DROP TRIGGER timer_counts_update;
DROP TRIGGER timer_counts_delete;

CREATE TRIGGER timer_counts_update AFTER UPDATE OF state, tenant_id ON timers
    WHEN OLD.state IS NOT NEW.state OR OLD.tenant_id IS NOT NEW.tenant_id
BEGIN
    INSERT INTO timer_counts (tenant_id, state, n) VALUES (OLD.tenant_id, OLD.state, -1)
        ON CONFLICT (tenant_id, state) DO UPDATE SET n = n - 1;
    INSERT INTO timer_counts (tenant_id, state, n) VALUES (NEW.tenant_id, NEW.state, 1)
        ON CONFLICT (tenant_id, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER timer_counts_delete AFTER DELETE ON timers
BEGIN
    INSERT INTO timer_counts (tenant_id, state, n) VALUES (OLD.tenant_id, OLD.state, -1)
        ON CONFLICT (tenant_id, state) DO UPDATE SET n = n - 1;
END;
