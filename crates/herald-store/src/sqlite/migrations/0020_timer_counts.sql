-- Timer counts per tenant and state (issue 17), kept as rows change so the
-- gauges and `GET /v1/stats` read a handful of rows instead of scanning
-- `timers`. Triggers keep them: every write to `timers` (insert, a change
-- of state or tenant, delete) adjusts the counts in the same transaction, so
-- they stay exact through crashes and through every path that writes a
-- timer, present or future. SQLite has one writer, so one row per
-- (tenant, state) is no hot spot. Seeded from the rows already stored.
CREATE TABLE timer_counts (
    tenant_id INTEGER NOT NULL,
    state     INTEGER NOT NULL,
    n         INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, state)
) STRICT, WITHOUT ROWID;
INSERT INTO timer_counts (tenant_id, state, n)
    SELECT tenant_id, state, count(*) FROM timers GROUP BY tenant_id, state;

CREATE TRIGGER timer_counts_insert AFTER INSERT ON timers
BEGIN
    INSERT INTO timer_counts (tenant_id, state, n) VALUES (NEW.tenant_id, NEW.state, 1)
        ON CONFLICT (tenant_id, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER timer_counts_update AFTER UPDATE OF state, tenant_id ON timers
    WHEN OLD.state IS NOT NEW.state OR OLD.tenant_id IS NOT NEW.tenant_id
BEGIN
    UPDATE timer_counts SET n = n - 1 WHERE tenant_id = OLD.tenant_id AND state = OLD.state;
    INSERT INTO timer_counts (tenant_id, state, n) VALUES (NEW.tenant_id, NEW.state, 1)
        ON CONFLICT (tenant_id, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER timer_counts_delete AFTER DELETE ON timers
BEGIN
    UPDATE timer_counts SET n = n - 1 WHERE tenant_id = OLD.tenant_id AND state = OLD.state;
END;
