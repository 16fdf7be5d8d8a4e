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

-- A job's follow-up (`follow_up` on POST /v1/jobs): after_ms after the job
-- ends, a new job sends `message` to the recipients it delivered to that sent
-- no read receipt. state: 0 waiting, 1 sent (follow_up_job_id), 2 skipped.
CREATE TABLE job_follow_ups (
    job_id           BIGINT PRIMARY KEY,
    after_ms         BIGINT NOT NULL,
    message          TEXT NOT NULL,
    state            BIGINT NOT NULL,
    follow_up_job_id BIGINT,
    done_at          BIGINT
);
CREATE INDEX job_follow_ups_waiting ON job_follow_ups (job_id) WHERE state = 0;
