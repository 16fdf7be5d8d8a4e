-- Fallback routes (issue 39 §2): the send log keeps which step of a timer's
-- route each attempt was (null for a timer without a route).
ALTER TABLE deliveries ADD COLUMN step INTEGER;
