-- Nothing changes on SQLite. On PostgreSQL this migration drops
-- `timers_tenant_due`, whose upkeep on every completion cost more there than
-- the searches it served; SQLite's searches still name it (`INDEXED BY`).
-- Kept so that a schema version means the same on both backends.
SELECT 1;
