-- Frequency caps (issue 39 §3): sends counted per (tenant, key, bucket),
-- the key naming the cap, the user and (per channel type) the type. A
-- window is the sum of its buckets; buckets out of the window are deleted
-- when their key is next taken. Takes serialise per key on an advisory lock.
CREATE TABLE cap_counters (
    tenant_id INTEGER NOT NULL,
    cap_key   TEXT COLLATE "C" NOT NULL,
    bucket    BIGINT  NOT NULL,
    count     BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, cap_key, bucket)
);
