-- What providers report after the send: a final status on both send logs,
-- and the cluster-wide channel access tokens. Adding nullable columns rewrites
-- no row. The two message-id indexes are partial: rows without a provider
-- message id (failures, retries, channels that give none) never enter them, so
-- inserting those costs nothing extra. An existing database builds them once,
-- while migrating.
ALTER TABLE deliveries ADD COLUMN final_status TEXT;
ALTER TABLE deliveries ADD COLUMN final_at INTEGER;
CREATE INDEX deliveries_msgid ON deliveries (channel, provider_msgid)
    WHERE provider_msgid IS NOT NULL;
ALTER TABLE job_sends ADD COLUMN final_status TEXT;
ALTER TABLE job_sends ADD COLUMN final_at INTEGER;
CREATE INDEX job_sends_msgid ON job_sends (msgid) WHERE msgid IS NOT NULL;
CREATE TABLE channel_tokens (
    key        TEXT PRIMARY KEY,
    token      TEXT    NOT NULL,
    expires_at INTEGER NOT NULL,
    fetched_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
