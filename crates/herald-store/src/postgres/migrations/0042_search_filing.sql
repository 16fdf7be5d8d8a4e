-- Nothing changes on PostgreSQL. On SQLite this migration lets new timers
-- reach the search indexes in the background (a `filed` flag, partial
-- indexes and a filer): there one writer commits everything, and a page
-- dirtied per insert in the recipient index bounded ingest. PostgreSQL
-- keeps its indexes up to date in the insert, as before. Kept so that a
-- schema version means the same on both backends.
SELECT 1;
