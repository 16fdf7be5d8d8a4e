-- The rows that were `retry`, rewritten with the values worked out under their
-- locks. An upsert rather than `UPDATE ... FROM unnest(...)`: each row is one
-- primary-key probe, with no join for the planner to get wrong (a generic plan
-- cached for the join, expecting ten array elements, looped over the whole
-- array for every row: 90 ms for 500 rows).
INSERT INTO job_sends AS s
    (job_id, idx, recipient, state, attempts, msgid, error, updated_at)
SELECT $1, u.idx, u.recipient, u.state, u.attempts, u.msgid, u.error, $8
FROM unnest($2::int8[], $3::text[], $4::text[], $5::int4[], $6::text[], $7::text[])
    AS u(idx, recipient, state, attempts, msgid, error)
ON CONFLICT (job_id, idx) DO UPDATE SET recipient = EXCLUDED.recipient,
    state = EXCLUDED.state, attempts = EXCLUDED.attempts, msgid = EXCLUDED.msgid,
    error = EXCLUDED.error, updated_at = EXCLUDED.updated_at
