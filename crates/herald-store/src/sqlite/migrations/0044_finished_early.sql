-- Nothing changes on SQLite. On PostgreSQL this replaces the index retention
-- read (`timers_finished`), which every completion wrote, with one of the
-- timers that finished before their due time (see the PostgreSQL migration).
-- SQLite's completions also write its filer's indexes, and its retention
-- keeps `timers_finished`. Kept so that a schema version means the same on
-- both backends.
SELECT 1;
