-- Cluster membership, shard leases and named leases.
CREATE TABLE nodes (
    node_id    TEXT PRIMARY KEY,
    started_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE TABLE shard_leases (
    shard       INTEGER PRIMARY KEY,
    owner       TEXT,
    lease_until INTEGER NOT NULL,
    epoch       INTEGER NOT NULL
) STRICT;
CREATE TABLE named_leases (
    name        TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    lease_until INTEGER NOT NULL,
    epoch       INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
