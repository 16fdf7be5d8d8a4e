-- The pending index keys on `shard` too (issue 18). A node that owns part of
-- the shards scans it by ranges of its shards (`ShardSet::ranges`); with
-- `shard` a key column the range is tested on the index entry, so the rows of
-- other nodes' shards are skipped without being fetched. As an included
-- column it could only filter after the fetch: with three nodes each one
-- fetched every pending row, three for each it owned.
DROP INDEX timers_pending_due;
CREATE INDEX timers_pending_due ON timers (due_at, id, shard)
    INCLUDE (priority, tenant_id) WHERE state = 0;
