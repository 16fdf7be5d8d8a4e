-- Nothing changes on PostgreSQL. On SQLite this migration drops the row
-- trigger that counted inserted timers (the write batch counts them
-- instead); PostgreSQL's statement-level triggers of migration 0020 already
-- cost one statement per writing statement, not per row. Kept so that a
-- schema version means the same on both backends.
SELECT 1;
