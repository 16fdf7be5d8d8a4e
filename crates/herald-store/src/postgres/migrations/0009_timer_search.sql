-- Timer search, retry and trace context (issue 15). Mirrors SQLite's.
--
-- `attempt_base` is the attempt count when the timer's current series of
-- attempts began (0, or the count at its last retry), so the retry policy
-- counts from the new series while the send log keeps numbering on.
-- `traceparent` is the W3C trace context of the request that created it.
--
-- Three indexes serve the searches of one tenant's timers in `(due_at, id)`
-- order: all of them, those in one state (the dead-letter views and
-- retries), and one recipient's. Searches by idempotency key use
-- `timers_idempotency_key`.
ALTER TABLE timers ADD COLUMN attempt_base BIGINT NOT NULL DEFAULT 0;
ALTER TABLE timers ADD COLUMN traceparent TEXT;
CREATE INDEX timers_tenant_due ON timers (tenant_id, due_at, id);
CREATE INDEX timers_tenant_state_due ON timers (tenant_id, state, due_at, id);
CREATE INDEX timers_tenant_recipient_due ON timers (tenant_id, recipient, due_at, id);
