-- The timers of the claimed bits, under the ids drawn for them. As for plain
-- inserts, keyed timers skip a key their tenant has taken; answers the keyed
-- ids inserted. `routing` is set only for a reminder with a fallback route.
WITH src AS (
    SELECT * FROM unnest($1::int8[], $2::int4[], $3::int8[], $4::int2[], $5::text[],
                         $6::text[], $7::text[], $8::text[], $9::text[], $10::int8[],
                         $11::int4[], $12::text[])
         AS u(id, shard, due_at, priority, kind, channel, recipient, message,
              idempotency_key, created_at, tenant_id, routing)
), plain AS (
    INSERT INTO timers (id, shard, due_at, priority, kind, state, channel, recipient,
                        message, idempotency_key, attempts, created_at, updated_at, tenant_id,
                        routing)
    SELECT id, shard, due_at, priority, kind, 0, channel, recipient, message,
           NULL, 0, created_at, created_at, tenant_id, routing
    FROM src WHERE idempotency_key IS NULL
), keyed AS (
    INSERT INTO timers (id, shard, due_at, priority, kind, state, channel, recipient,
                        message, idempotency_key, attempts, created_at, updated_at, tenant_id,
                        routing)
    SELECT id, shard, due_at, priority, kind, 0, channel, recipient, message,
           idempotency_key, 0, created_at, created_at, tenant_id, routing
    FROM src WHERE idempotency_key IS NOT NULL
    ON CONFLICT (idempotency_key, tenant_id) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING id
)
SELECT array_agg(id) FROM keyed
