-- Operator pauses of channels (issue 15): one row per paused channel, read by
-- every node's engine about once a second, so a pause holds the channel's
-- deliveries cluster-wide. `until` is null for a pause that lasts until
-- resumed; an expired row pauses nothing and is replaced by the next pause.
CREATE TABLE channel_pauses (
    channel    TEXT    PRIMARY KEY,
    since      INTEGER NOT NULL,
    until      INTEGER,
    reason     TEXT,
    updated_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
