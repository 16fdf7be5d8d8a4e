-- Jobs (issue 39): a name and a category (the business kind, e.g.
-- "coupon-reminder"), both optional, for listing and filtering. A job a
-- rule starts takes the rule's name. The index serves the tenant's list
-- filtered by category, newest first.
ALTER TABLE jobs ADD COLUMN name TEXT;
ALTER TABLE jobs ADD COLUMN category TEXT;
CREATE INDEX jobs_category ON jobs (tenant_id, category, id) WHERE category IS NOT NULL;
