-- Frequency caps (issue 39 §3): sends counted per (tenant, key, bucket),
-- the key naming the cap, the user and (per channel type) the type. A
-- window is the sum of its buckets; buckets out of the window are deleted
-- when their key is next taken.
CREATE TABLE cap_counters (
    tenant_id INTEGER NOT NULL,
    cap_key   TEXT    NOT NULL,
    bucket    INTEGER NOT NULL,
    count     INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, cap_key, bucket)
) STRICT, WITHOUT ROWID;
