-- Jobs (issue 38): the W3C trace context of the request that created the
-- job, which the spans of its segment runs link to. NULL for a job made
-- by a rule or a follow-up, or created without one.
ALTER TABLE jobs ADD COLUMN traceparent TEXT;
