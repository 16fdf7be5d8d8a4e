-- Working-day calendars (issue 40): one row per tenant and name, its JSON
-- spec replaced whole on each PUT. Built-in calendars are not stored.
CREATE TABLE calendars (
    tenant_id  INTEGER NOT NULL,
    name       TEXT COLLATE "C" NOT NULL,
    body       TEXT    NOT NULL,
    created_at BIGINT  NOT NULL,
    updated_at BIGINT  NOT NULL,
    updated_by TEXT,
    PRIMARY KEY (tenant_id, name)
);
