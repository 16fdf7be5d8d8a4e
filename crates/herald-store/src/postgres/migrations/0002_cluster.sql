-- Cluster membership, shard leases and named leases. (Releases before this
-- numbering recorded these tables with the timers, as one migration 1.)
CREATE TABLE nodes (
    node_id    TEXT COLLATE "C" PRIMARY KEY,
    started_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE TABLE shard_leases (
    shard       INTEGER PRIMARY KEY,
    owner       TEXT COLLATE "C",
    lease_until BIGINT NOT NULL,
    epoch       BIGINT NOT NULL
);
CREATE TABLE named_leases (
    name        TEXT COLLATE "C" PRIMARY KEY,
    holder      TEXT COLLATE "C" NOT NULL,
    lease_until BIGINT NOT NULL,
    epoch       BIGINT NOT NULL
);
