-- What providers report after the send (see `provider.rs`): a final status on
-- both send logs, found by message id through partial indexes (rows without a
-- message id never enter them), and the cluster-wide channel access tokens.
-- Adding nullable columns without a default rewrites no row; an existing
-- database builds the two indexes once, here.
ALTER TABLE deliveries ADD COLUMN final_status TEXT, ADD COLUMN final_at BIGINT;
CREATE INDEX deliveries_msgid ON deliveries (channel, provider_msgid)
    WHERE provider_msgid IS NOT NULL;
ALTER TABLE job_sends ADD COLUMN final_status TEXT, ADD COLUMN final_at BIGINT;
CREATE INDEX job_sends_msgid ON job_sends (msgid) WHERE msgid IS NOT NULL;
CREATE TABLE channel_tokens (
    key        TEXT COLLATE "C" PRIMARY KEY,
    token      TEXT   NOT NULL,
    expires_at BIGINT NOT NULL,
    fetched_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
