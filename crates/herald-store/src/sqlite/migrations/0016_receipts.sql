-- Receipts (issue 16): what an app or a provider reports after a message was
-- sent: delivered, read, clicked. One row per send and event; the first
-- report counts, a repeat changes nothing. A campaign's counts are kept per
-- job and event, so a job's page reads two small rows instead of counting.
CREATE TABLE job_receipts (
    job_id INTEGER NOT NULL,
    idx    INTEGER NOT NULL,
    event  TEXT NOT NULL,
    at     INTEGER NOT NULL,
    PRIMARY KEY (job_id, idx, event)
) STRICT, WITHOUT ROWID;
CREATE TABLE job_receipt_counts (
    job_id INTEGER NOT NULL,
    event  TEXT NOT NULL,
    n      INTEGER NOT NULL,
    PRIMARY KEY (job_id, event)
) STRICT, WITHOUT ROWID;
CREATE TABLE delivery_receipts (
    delivery_id INTEGER NOT NULL,
    event       TEXT NOT NULL,
    at          INTEGER NOT NULL,
    PRIMARY KEY (delivery_id, event)
) STRICT, WITHOUT ROWID;
