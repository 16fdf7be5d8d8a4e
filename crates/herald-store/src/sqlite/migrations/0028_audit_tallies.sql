-- Refusals before any key is recognised are counted, not logged one by one
-- (issue 35): one row per reason, route and status per minute, with how many
-- it stands for. Every row written before this stands for one request.
ALTER TABLE audit_log ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
ALTER TABLE audit_log ADD COLUMN reason TEXT;
