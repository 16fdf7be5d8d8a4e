-- Message templates (issue 39): one row per version, written once and never
-- changed. Every node keeps them all in memory and reloads when the count or
-- the largest id moves.
CREATE TABLE templates (
    id         BIGSERIAL PRIMARY KEY,
    tenant_id  INTEGER NOT NULL,
    name       TEXT COLLATE "C" NOT NULL,
    version    INTEGER NOT NULL,
    body       TEXT    NOT NULL,
    created_at BIGINT  NOT NULL,
    created_by TEXT,
    UNIQUE (tenant_id, name, version)
);
