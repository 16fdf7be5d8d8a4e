-- Timers addressed to a subscriber rather than a raw recipient (issue 16):
-- how the directory routes them when they fire (the channel type whose
-- address to use, the message's topic, whether it is critical), as JSON.
-- NULL for a timer sent to its recipient as stored: nothing to rewrite.
ALTER TABLE timers ADD COLUMN routing TEXT;
