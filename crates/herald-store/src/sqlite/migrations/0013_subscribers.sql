-- The subscriber directory (issue 16): one row per (tenant, user) with the
-- user's profile as JSON (addresses per channel type, time zone, locale,
-- preferences, quiet hours), checked before it is written. `version` grows
-- with every write, so a merge (`PATCH`) can be written only over the
-- version it read.
CREATE TABLE subscribers (
    tenant_id  INTEGER NOT NULL,
    user_id    TEXT    NOT NULL,
    profile    TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, user_id)
) STRICT, WITHOUT ROWID;
