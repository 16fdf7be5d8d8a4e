-- Nothing changes on PostgreSQL, which files every timer as it is inserted
-- (see 0042). On SQLite this adds an index of the unfiled finished timers.
-- Kept so that a schema version means the same on both backends.
SELECT 1;
