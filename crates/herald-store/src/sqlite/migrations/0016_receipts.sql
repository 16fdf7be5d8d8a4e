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

-- A job's follow-up (`follow_up` on POST /v1/jobs): after_ms after the job
-- ends, a new job sends `message` to the recipients it delivered to that sent
-- no read receipt. state: 0 waiting, 1 sent (follow_up_job_id), 2 skipped.
CREATE TABLE job_follow_ups (
    job_id           INTEGER PRIMARY KEY,
    after_ms         INTEGER NOT NULL,
    message          TEXT NOT NULL,
    state            INTEGER NOT NULL,
    follow_up_job_id INTEGER,
    done_at          INTEGER
) STRICT;
CREATE INDEX job_follow_ups_waiting ON job_follow_ups (job_id) WHERE state = 0;
