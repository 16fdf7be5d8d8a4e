-- What a timer's completion writes on PostgreSQL, today and with its state
-- kept off every index (issue 18's next step). Run against a database that
-- `herald serve` has migrated and that holds no timers yet:
--
--   psql -X -d herald -f scripts/pg-completion-wal.sql
--
-- It loads 300,000 pending timers, then completes 1,000 three ways and
-- prints each statement's WAL (`EXPLAIN (ANALYZE, WAL)`) after a checkpoint:
--   A. today: one `UPDATE` of `timers` (its state is in two indexes and two
--      index predicates, so every update adds entries to every index);
--   B. the same update of a copy of `timers` whose state and `updated_at`
--      are in no index, with room on each page for the new row versions
--      (`psql -v fillfactor=N`, 70 unless given), so an update can be HOT;
--   C. the delete from a pending queue that B would need instead of the
--      partial pending index.
-- The timers are due at 1000 and complete at 1005, after their due time, as
-- a delivery does (a timer that finishes before its due time also enters
-- `timers_finished_early`, migration 0044).
\set ON_ERROR_STOP on
\if :{?fillfactor}
\else
  \set fillfactor 70
\endif
INSERT INTO timers (shard, due_at, priority, kind, state, channel, recipient, message, created_at, updated_at)
SELECT g % 256, 1000, 0, 'timer', 0, 'webhook', 'https://example.test/hook/' || g, '{"text":"hello"}', 1, 1
FROM generate_series(1, 300000) g;
CREATE TABLE wal_t (LIKE timers INCLUDING DEFAULTS) WITH (fillfactor = :fillfactor);
INSERT INTO wal_t SELECT * FROM timers;
ALTER TABLE wal_t ADD PRIMARY KEY (id);
CREATE INDEX ON wal_t (tenant_id, recipient, due_at, id);
CREATE INDEX ON wal_t (tenant_id, due_at, id);
CREATE TABLE wal_q (id bigint PRIMARY KEY, due_at bigint NOT NULL, shard int NOT NULL,
                    priority smallint NOT NULL, tenant_id int NOT NULL);
INSERT INTO wal_q SELECT id, due_at, shard, priority, tenant_id FROM timers;
CREATE INDEX ON wal_q (due_at, id, shard) INCLUDE (priority, tenant_id);
SELECT min(id) + 100000 AS lo, min(id) + 100999 AS hi FROM timers \gset
VACUUM ANALYZE timers;
VACUUM ANALYZE wal_t;
VACUUM ANALYZE wal_q;
CHECKPOINT;
\echo A: today
EXPLAIN (ANALYZE, WAL, COSTS OFF, TIMING OFF, SUMMARY OFF)
UPDATE timers SET state = 2, attempts = 1, updated_at = 1005, delivered_at = 1005
WHERE id BETWEEN :lo AND :hi;
\echo B: state off the indexes
EXPLAIN (ANALYZE, WAL, COSTS OFF, TIMING OFF, SUMMARY OFF)
UPDATE wal_t SET state = 2, attempts = 1, updated_at = 1005, delivered_at = 1005
WHERE id BETWEEN :lo AND :hi;
\echo C: the queue delete B needs
EXPLAIN (ANALYZE, WAL, COSTS OFF, TIMING OFF, SUMMARY OFF)
DELETE FROM wal_q WHERE id BETWEEN :lo AND :hi;
SELECT pg_sleep(1);
SELECT relname, n_tup_upd AS updated, n_tup_hot_upd AS hot
FROM pg_stat_user_tables WHERE relname IN ('timers', 'wal_t') ORDER BY relname;
DROP TABLE wal_t, wal_q;
DELETE FROM timers;
