-- Nothing changes on SQLite, whose single writer never waits on a row lock.
-- On PostgreSQL this migration splits `report_counts` into stripes, so that
-- nodes committing at once do not queue on one row. Kept so that a schema
-- version means the same on both backends.
SELECT 1;
