-- Rules, jobs and tasks (issue 39): who created and who last changed each,
-- as the API key's id and name, kept on the row whatever the audit log's
-- retention. NULL for open access, for the planner's own work and for rows
-- older than this migration; the admin key has a name and no id.
ALTER TABLE rules ADD COLUMN created_by_key_id INTEGER;
ALTER TABLE rules ADD COLUMN created_by_key_name TEXT;
ALTER TABLE rules ADD COLUMN changed_by_key_id INTEGER;
ALTER TABLE rules ADD COLUMN changed_by_key_name TEXT;
ALTER TABLE jobs ADD COLUMN created_by_key_id INTEGER;
ALTER TABLE jobs ADD COLUMN created_by_key_name TEXT;
ALTER TABLE jobs ADD COLUMN changed_by_key_id INTEGER;
ALTER TABLE jobs ADD COLUMN changed_by_key_name TEXT;
ALTER TABLE tasks ADD COLUMN created_by_key_id INTEGER;
ALTER TABLE tasks ADD COLUMN created_by_key_name TEXT;
ALTER TABLE tasks ADD COLUMN changed_by_key_id INTEGER;
ALTER TABLE tasks ADD COLUMN changed_by_key_name TEXT;
