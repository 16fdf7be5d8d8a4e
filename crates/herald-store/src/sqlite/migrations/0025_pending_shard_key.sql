-- Nothing changes on SQLite, which runs one node and scans every shard. On
-- PostgreSQL this migration makes `shard` a key column of the pending index,
-- so a node's due scan skips other nodes' shards on the index entry.
-- Kept so that a schema version means the same on both backends.
SELECT 1;
