-- Nothing to do here: partitioning the send logs (issue 17) is PostgreSQL's.
-- SQLite deletes old send-log rows in batches (see `sqlite/retention.rs`).
SELECT 1;
