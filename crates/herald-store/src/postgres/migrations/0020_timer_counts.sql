-- Timer counts per tenant and state (issue 17), kept as rows change so the
-- gauges and `GET /v1/stats` read a small table instead of scanning
-- `timers`. Triggers keep them, in the transaction of the change, so they
-- stay exact through crashes and through every path that writes a timer.
--
-- One counter row per (tenant, state) updated by every transaction would
-- serialise all writers on its row lock. So the triggers only append: one
-- statement-level trigger per statement (a bulk insert or a batch of
-- completions is one statement) adds a delta row per (tenant, state) it
-- changed to `timer_count_deltas`, which has no key and no index and takes
-- no lock another writer waits on. The count is `timer_counts` plus the sum
-- of the deltas; a periodic fold (`Store::fold_timer_counts`) moves the
-- deltas into `timer_counts` so that sum stays small. Seeded from the rows
-- already stored.
CREATE TABLE timer_counts (
    tenant_id INTEGER  NOT NULL,
    state     SMALLINT NOT NULL,
    n         BIGINT   NOT NULL,
    PRIMARY KEY (tenant_id, state)
);
CREATE TABLE timer_count_deltas (
    tenant_id INTEGER  NOT NULL,
    state     SMALLINT NOT NULL,
    n         BIGINT   NOT NULL
);
INSERT INTO timer_counts (tenant_id, state, n)
    SELECT tenant_id, state, count(*) FROM timers GROUP BY tenant_id, state;

CREATE FUNCTION timer_counts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO timer_count_deltas (tenant_id, state, n)
        SELECT tenant_id, state, count(*) FROM new_rows GROUP BY tenant_id, state;
    RETURN NULL;
END $$;

CREATE FUNCTION timer_counts_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO timer_count_deltas (tenant_id, state, n)
        SELECT tenant_id, state, sum(n) FROM (
            SELECT tenant_id, state, 1 AS n FROM new_rows
            UNION ALL
            SELECT tenant_id, state, -1 AS n FROM old_rows
        ) AS d
        GROUP BY tenant_id, state HAVING sum(n) <> 0;
    RETURN NULL;
END $$;

CREATE FUNCTION timer_counts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO timer_count_deltas (tenant_id, state, n)
        SELECT tenant_id, state, -count(*) FROM old_rows GROUP BY tenant_id, state;
    RETURN NULL;
END $$;

CREATE TRIGGER timer_counts_insert AFTER INSERT ON timers
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION timer_counts_inserted();
CREATE TRIGGER timer_counts_update AFTER UPDATE ON timers
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION timer_counts_updated();
CREATE TRIGGER timer_counts_delete AFTER DELETE ON timers
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION timer_counts_deleted();
