-- Cap, pacing and rate-key counters (issue 39 §3) say when they stop
-- counting, so the retention sweeper can delete those whose key is never
-- taken again (a take prunes only its own key's old buckets). Rows written
-- before this migration get the longest a bucket can count: the longest
-- window (31 days) and one bucket more.
ALTER TABLE cap_counters ADD COLUMN expires_at BIGINT;
UPDATE cap_counters SET expires_at = bucket + 2946240000 WHERE expires_at IS NULL;
CREATE INDEX cap_counters_expiry ON cap_counters (expires_at);
