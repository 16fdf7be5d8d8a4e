-- In-doubt single timers (issue 19). A timer on a channel configured
-- `in_doubt = "skip"` is stored `firing` (state 1) before its send leaves, so
-- it drops out of the pending index; a node taking the shard over finds the
-- ones a dead node left through this index, which holds only the few being
-- sent at any moment, and ends them `in_doubt` (state 6) or pending again.
CREATE INDEX timers_firing ON timers (shard, id) WHERE state = 1;
