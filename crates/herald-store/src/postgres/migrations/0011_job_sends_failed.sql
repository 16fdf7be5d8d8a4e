-- A job's failed sends (issue 15): `GET /v1/jobs/{id}/failures` groups them and
-- `:retry-failed` sends them again, both reading only this index.
CREATE INDEX job_sends_failed ON job_sends (job_id, idx) WHERE state = 'failed';
