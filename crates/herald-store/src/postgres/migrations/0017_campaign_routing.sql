-- Jobs and rules whose audience holds user ids (issue 16): how the directory
-- routes each recipient when the job sends (the channel type whose address
-- to use, the message's topic, whether it is critical), as JSON, the same
-- shape as timers.routing. NULL for an audience of raw addresses.
ALTER TABLE jobs ADD COLUMN routing TEXT;
ALTER TABLE rule_versions ADD COLUMN routing TEXT;
