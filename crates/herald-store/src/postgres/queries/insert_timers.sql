-- One row per new timer, ids drawn in op order. Timers without a key go in with a
-- plain insert; keyed ones with `ON CONFLICT DO NOTHING` (a speculative insert,
-- measurably slower), skipping those whose key their tenant has taken. Answers
-- the ids drawn (in op order) and the ids of the keyed timers actually inserted.
WITH src AS (
    SELECT nextval('timers_id_seq') AS id, u.*
    FROM unnest($1::int4[], $2::int8[], $3::int2[], $4::text[], $5::text[], $6::text[],
                $7::text[], $8::text[], $9::int8[], $10::int4[], $11::text[], $12::text[]) WITH ORDINALITY
         AS u(shard, due_at, priority, kind, channel, recipient, message, idempotency_key,
              created_at, tenant_id, traceparent, routing, ord)
), plain AS (
    INSERT INTO timers (id, shard, due_at, priority, kind, state, channel, recipient,
                        message, idempotency_key, attempts, created_at, updated_at, tenant_id,
                        traceparent, routing)
    SELECT id, shard, due_at, priority, kind, 0, channel, recipient, message,
           NULL, 0, created_at, created_at, tenant_id, traceparent, routing
    FROM src WHERE idempotency_key IS NULL
), keyed AS (
    INSERT INTO timers (id, shard, due_at, priority, kind, state, channel, recipient,
                        message, idempotency_key, attempts, created_at, updated_at, tenant_id,
                        traceparent, routing)
    SELECT id, shard, due_at, priority, kind, 0, channel, recipient, message,
           idempotency_key, 0, created_at, created_at, tenant_id, traceparent, routing
    FROM src WHERE idempotency_key IS NOT NULL
    ON CONFLICT (idempotency_key, tenant_id) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING id
)
SELECT (SELECT array_agg(id ORDER BY ord) FROM src), (SELECT array_agg(id) FROM keyed)
