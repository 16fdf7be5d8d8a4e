-- Report counts in stripes (issue 18). Every completion batch and every
-- campaign send batch adds to the row of its day, tenant, channel, outcome,
-- rule and job, and holds that row's lock until it commits. With several
-- nodes draining the same burst they all wanted the same row, so their
-- commits ran one after another: with three nodes, 2.2 ms of waiting per
-- batch, and no two commits could share a WAL flush.
--
-- Each writer now adds to one of 16 stripes of the key, picked by its
-- backend process id, so concurrent writers rarely meet. Readers already sum
-- the rows of a key. The existing rows become stripe 0.
ALTER TABLE report_counts ADD COLUMN stripe SMALLINT NOT NULL DEFAULT 0;
ALTER TABLE report_counts DROP CONSTRAINT report_counts_pkey,
    ADD CONSTRAINT report_counts_pkey
    PRIMARY KEY (day, tenant_id, channel, outcome, rule_id, job_id, stripe);
