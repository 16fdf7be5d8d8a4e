-- One index fewer on every timer write (issue 18). A completion changes
-- `state`, so it can never be a HOT update: each one adds the new row
-- version to every index of `timers`. `timers_tenant_due` served only the
-- search of all of a tenant's timers in due order, which now walks
-- `timers_tenant_state_due` once per stored state and merges the walks
-- (`timer_query.rs`). Dropping it took PostgreSQL from 21.1 to 17.9 µs of
-- CPU per timer in a 1,000,000-timer burst, and bulk ingest from 79k to
-- 94k timers a second.
DROP INDEX timers_tenant_due;
