-- Incarnations (issue 14): a lease belongs to a node id and the incarnation
-- one process start drew, so a second process under the same node id is
-- another holder. Rows written before carry incarnation 0, which no process
-- draws: a node upgraded after a crash waits for its old leases to expire.
ALTER TABLE nodes ADD COLUMN incarnation BIGINT NOT NULL DEFAULT 0;
ALTER TABLE shard_leases ADD COLUMN incarnation BIGINT NOT NULL DEFAULT 0;
ALTER TABLE named_leases ADD COLUMN incarnation BIGINT NOT NULL DEFAULT 0;
