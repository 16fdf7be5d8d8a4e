-- In-doubt sends of a campaign (issue 19).
--
-- `segments.sent_to`: every index at or above it was never handed to the
-- channel by this segment's holder. A worker raises it (under its claim)
-- before a send leaves, never further than its window of unrecorded sends, so
-- after a crash the recipients that may have been sent without a recorded
-- outcome are the unfinished ones in `[cursor_idx, sent_to)`.
-- `segments.doubt_from`, `doubt_to`: that range, carried by the segment that
-- re-issues an abandoned one; its worker resolves those recipients first by
-- the channel's `in_doubt` choice (send again, or end them `in_doubt`).
-- `jobs.in_doubt`: recipients that ended `in_doubt`.
ALTER TABLE segments ADD COLUMN sent_to BIGINT NOT NULL DEFAULT 0;
ALTER TABLE segments ADD COLUMN doubt_from BIGINT NOT NULL DEFAULT 0;
ALTER TABLE segments ADD COLUMN doubt_to BIGINT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN in_doubt BIGINT NOT NULL DEFAULT 0;
-- `GET /v1/jobs/{id}/sends?outcome=in_doubt` reads only these rows.
CREATE INDEX job_sends_in_doubt ON job_sends (job_id, idx) WHERE state = 'in_doubt';
-- Each partition's copy of the index is named `job_sends_in_doubt_<suffix>`,
-- as `herald_add_partitions` names those of later partitions.
DO $$
DECLARE
    part RECORD;
BEGIN
    FOR part IN SELECT c.relname AS name FROM pg_inherits AS i
                JOIN pg_class AS c ON c.oid = i.inhrelid
                WHERE i.inhparent = 'job_sends'::regclass LOOP
        PERFORM herald_name_partition_indexes(part.name, substr(part.name, length('job_sends') + 2));
    END LOOP;
END $$;
