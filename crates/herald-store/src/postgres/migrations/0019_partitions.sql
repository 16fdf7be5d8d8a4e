-- The two send logs and their receipts become range-partitioned (issue 17),
-- so retention can drop a whole partition of old rows at once (see
-- `partitions.rs`). Ids grow with time, so a range of ids is a stretch of
-- time, and every key that finds a row today still holds the partition key:
--
--   deliveries, delivery_receipts  by delivery id (`id`, `delivery_id`)
--   job_sends,  job_receipts       by job id
--
-- A log and its receipts share their bounds, named `<table>_p<lower bound>`,
-- and go together; their indexes are named `<parent index>_p<lower bound>`
-- (`herald_add_partitions` makes a pair, maintenance calls it). Primary keys are unchanged (they hold the partition key),
-- so every uniqueness there was still holds. Each table has a default
-- partition for keys outside every range. The widths are kept in `meta`.
-- Existing rows are moved into partitions of those widths, covering every
-- stored key and one width past the next id; the old table is dropped and
-- its id sequence kept. Indexes are built after the rows are in, under
-- their old names on the parent.
INSERT INTO meta (key, value) VALUES
    ('partition_span.deliveries', '10000000'),
    ('partition_span.job_sends', '100');

-- Names a partition's indexes after its parent's: `<parent index>_<suffix>`
-- (`deliveries_timer_p0`), so a plan names the index it uses.
CREATE FUNCTION herald_name_partition_indexes(part TEXT, suffix TEXT) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    ix RECORD;
BEGIN
    FOR ix IN SELECT c.relname AS name, p.relname AS parent
              FROM pg_index AS x
              JOIN pg_class AS c ON c.oid = x.indexrelid
              JOIN pg_inherits AS i ON i.inhrelid = x.indexrelid
              JOIN pg_class AS p ON p.oid = i.inhparent
              WHERE x.indrelid = to_regclass(part) LOOP
        IF ix.name <> ix.parent || '_' || suffix THEN
            EXECUTE format('ALTER INDEX %I RENAME TO %I', ix.name, ix.parent || '_' || suffix);
        END IF;
    END LOOP;
END $$;

-- Makes the range [lo, hi) of a send log and of its receipts, each
-- `<table>_p<lo>`. Retention's maintenance calls it ahead of the rows.
CREATE FUNCTION herald_add_partitions(log TEXT, receipts TEXT, lo BIGINT, hi BIGINT)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%s) TO (%s)',
                   log || '_p' || lo, log, lo, hi);
    EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%s) TO (%s)',
                   receipts || '_p' || lo, receipts, lo, hi);
    PERFORM herald_name_partition_indexes(log || '_p' || lo, 'p' || lo);
    PERFORM herald_name_partition_indexes(receipts || '_p' || lo, 'p' || lo);
END $$;

-- The ranges of `log` and `receipts` covering [first, last] in steps of
-- `span` (aligned on multiples of it), and their default partitions.
CREATE FUNCTION pg_temp.herald_partition(log TEXT, receipts TEXT, first BIGINT, last BIGINT,
                                         span BIGINT) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    lo BIGINT := (greatest(first, 0) / span) * span;
BEGIN
    WHILE lo <= last LOOP
        PERFORM herald_add_partitions(log, receipts, lo, lo + span);
        lo := lo + span;
    END LOOP;
    EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', log || '_default', log);
    EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', receipts || '_default', receipts);
END $$;

-- Names the indexes of every partition of `t`, once they are built.
CREATE FUNCTION pg_temp.herald_name_all(t TEXT) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    part RECORD;
BEGIN
    FOR part IN SELECT c.relname AS name FROM pg_inherits AS i
                JOIN pg_class AS c ON c.oid = i.inhrelid
                WHERE i.inhparent = to_regclass(t) LOOP
        PERFORM herald_name_partition_indexes(part.name, substr(part.name, length(t) + 2));
    END LOOP;
END $$;

-- The next value a sequence hands out.
CREATE FUNCTION pg_temp.herald_next(seq TEXT) RETURNS BIGINT LANGUAGE sql AS $$
    SELECT coalesce(pg_sequence_last_value(seq::regclass), 0) + 1
$$;

-- ---- the timer send log ----
ALTER TABLE deliveries RENAME TO deliveries_unpartitioned;
ALTER TABLE deliveries_unpartitioned DROP CONSTRAINT deliveries_pkey;
DROP INDEX deliveries_timer, deliveries_msgid;
ALTER TABLE delivery_receipts RENAME TO delivery_receipts_unpartitioned;
ALTER TABLE delivery_receipts_unpartitioned DROP CONSTRAINT delivery_receipts_pkey;
ALTER SEQUENCE deliveries_id_seq OWNED BY NONE;
ALTER TABLE deliveries_unpartitioned ALTER COLUMN id DROP DEFAULT;

CREATE TABLE deliveries (
    id              BIGINT NOT NULL DEFAULT nextval('deliveries_id_seq'),
    timer_id        BIGINT NOT NULL,
    attempt         BIGINT NOT NULL,
    channel         TEXT   NOT NULL,
    outcome         TEXT   NOT NULL,
    idempotency_key TEXT   NOT NULL,
    provider_msgid  TEXT,
    status          BIGINT,
    error           TEXT,
    started_at      BIGINT NOT NULL,
    finished_at     BIGINT NOT NULL,
    final_status    TEXT,
    final_at        BIGINT,
    tenant_id       INTEGER NOT NULL DEFAULT 1
) PARTITION BY RANGE (id);
ALTER SEQUENCE deliveries_id_seq OWNED BY deliveries.id;
CREATE TABLE delivery_receipts (
    delivery_id BIGINT NOT NULL,
    event       TEXT NOT NULL,
    at          BIGINT NOT NULL
) PARTITION BY RANGE (delivery_id);

SELECT pg_temp.herald_partition('deliveries', 'delivery_receipts',
    least((SELECT min(id) FROM deliveries_unpartitioned), pg_temp.herald_next('deliveries_id_seq')),
    pg_temp.herald_next('deliveries_id_seq') + 10000000,
    10000000);
INSERT INTO deliveries (id, timer_id, attempt, channel, outcome, idempotency_key,
        provider_msgid, status, error, started_at, finished_at, final_status, final_at,
        tenant_id)
    SELECT id, timer_id, attempt, channel, outcome, idempotency_key, provider_msgid, status,
        error, started_at, finished_at, final_status, final_at, tenant_id
    FROM deliveries_unpartitioned;
INSERT INTO delivery_receipts (delivery_id, event, at)
    SELECT delivery_id, event, at FROM delivery_receipts_unpartitioned;
DROP TABLE deliveries_unpartitioned, delivery_receipts_unpartitioned;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_pkey PRIMARY KEY (id);
CREATE INDEX deliveries_timer ON deliveries (timer_id, id);
CREATE INDEX deliveries_msgid ON deliveries (channel, provider_msgid)
    WHERE provider_msgid IS NOT NULL;
ALTER TABLE delivery_receipts
    ADD CONSTRAINT delivery_receipts_pkey PRIMARY KEY (delivery_id, event);
SELECT pg_temp.herald_name_all('deliveries'), pg_temp.herald_name_all('delivery_receipts');

-- ---- the campaign send log ----
ALTER TABLE job_sends RENAME TO job_sends_unpartitioned;
ALTER TABLE job_sends_unpartitioned DROP CONSTRAINT job_sends_pkey;
DROP INDEX job_sends_retry, job_sends_msgid, job_sends_failed;
ALTER TABLE job_receipts RENAME TO job_receipts_unpartitioned;
ALTER TABLE job_receipts_unpartitioned DROP CONSTRAINT job_receipts_pkey;

CREATE TABLE job_sends (
    job_id       BIGINT  NOT NULL,
    idx          BIGINT  NOT NULL,
    recipient    TEXT    NOT NULL,
    state        TEXT COLLATE "C" NOT NULL,
    attempts     INTEGER NOT NULL,
    msgid        TEXT,
    error        TEXT,
    updated_at   BIGINT  NOT NULL,
    final_status TEXT,
    final_at     BIGINT,
    tenant_id    INTEGER NOT NULL DEFAULT 1
) PARTITION BY RANGE (job_id);
CREATE TABLE job_receipts (
    job_id BIGINT NOT NULL,
    idx    BIGINT NOT NULL,
    event  TEXT NOT NULL,
    at     BIGINT NOT NULL
) PARTITION BY RANGE (job_id);

SELECT pg_temp.herald_partition('job_sends', 'job_receipts',
    least((SELECT min(job_id) FROM job_sends_unpartitioned), pg_temp.herald_next('jobs_id_seq')),
    pg_temp.herald_next('jobs_id_seq') + 100,
    100);
INSERT INTO job_sends (job_id, idx, recipient, state, attempts, msgid, error, updated_at,
        final_status, final_at, tenant_id)
    SELECT job_id, idx, recipient, state, attempts, msgid, error, updated_at, final_status,
        final_at, tenant_id
    FROM job_sends_unpartitioned;
INSERT INTO job_receipts (job_id, idx, event, at)
    SELECT job_id, idx, event, at FROM job_receipts_unpartitioned;
DROP TABLE job_sends_unpartitioned, job_receipts_unpartitioned;
ALTER TABLE job_sends ADD CONSTRAINT job_sends_pkey PRIMARY KEY (job_id, idx);
CREATE INDEX job_sends_retry ON job_sends (job_id, idx) WHERE state = 'retry';
CREATE INDEX job_sends_msgid ON job_sends (msgid) WHERE msgid IS NOT NULL;
CREATE INDEX job_sends_failed ON job_sends (job_id, idx) WHERE state = 'failed';
ALTER TABLE job_receipts ADD CONSTRAINT job_receipts_pkey PRIMARY KEY (job_id, idx, event);
SELECT pg_temp.herald_name_all('job_sends'), pg_temp.herald_name_all('job_receipts');

DROP FUNCTION pg_temp.herald_partition(TEXT, TEXT, BIGINT, BIGINT, BIGINT);
DROP FUNCTION pg_temp.herald_name_all(TEXT);
DROP FUNCTION pg_temp.herald_next(TEXT);
