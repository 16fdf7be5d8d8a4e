-- The subscriber directory (issue 16): one row per (tenant, user) with the
-- user's profile as JSON (addresses per channel type, time zone, locale,
-- preferences, quiet hours), checked before it is written. `version` grows
-- with every write, so a merge (`PATCH`) can be written only over the
-- version it read.
CREATE TABLE subscribers (
    tenant_id  INTEGER NOT NULL,
    user_id    TEXT    COLLATE "C" NOT NULL,
    profile    TEXT    NOT NULL,
    version    BIGINT  NOT NULL,
    created_at BIGINT  NOT NULL,
    updated_at BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, user_id)
);
