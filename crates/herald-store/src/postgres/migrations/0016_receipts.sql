-- Receipts (issue 16): what an app or a provider reports after a message was
-- sent: delivered, read, clicked. One row per send and event; the first
-- report counts, a repeat changes nothing. A campaign's counts are kept per
-- job and event, so a job's page reads two small rows instead of counting.
CREATE TABLE job_receipts (
    job_id BIGINT NOT NULL,
    idx    BIGINT NOT NULL,
    event  TEXT NOT NULL,
    at     BIGINT NOT NULL,
    PRIMARY KEY (job_id, idx, event)
);
CREATE TABLE job_receipt_counts (
    job_id BIGINT NOT NULL,
    event  TEXT NOT NULL,
    n      BIGINT NOT NULL,
    PRIMARY KEY (job_id, event)
);
CREATE TABLE delivery_receipts (
    delivery_id BIGINT NOT NULL,
    event       TEXT NOT NULL,
    at          BIGINT NOT NULL,
    PRIMARY KEY (delivery_id, event)
);
