-- Fallback routes (issue 39 §2): the send log keeps which step of a timer's
-- route each attempt was (null for a timer without a route). On the
-- partitioned parent, so every partition has it.
ALTER TABLE deliveries ADD COLUMN step BIGINT;
