-- Stored reports (issue 17): delivery outcomes counted per UTC day, tenant,
-- channel, outcome, rule and job, as the send logs record them. Written in
-- the transaction that writes the send log, never deleted by retention, so
-- they outlive the rows they count. `day` is days since 1970-01-01 (UTC);
-- `rule_id` and `job_id` are 0 for a timer's delivery, which has neither.
CREATE TABLE report_counts (
    day       INTEGER NOT NULL,
    tenant_id INTEGER NOT NULL,
    channel   TEXT    NOT NULL,
    outcome   TEXT    NOT NULL,
    rule_id   INTEGER NOT NULL,
    job_id    INTEGER NOT NULL,
    count     INTEGER NOT NULL,
    PRIMARY KEY (day, tenant_id, channel, outcome, rule_id, job_id)
) STRICT, WITHOUT ROWID;
