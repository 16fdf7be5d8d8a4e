-- Reminders that arrive in time (issue 39 §4). A subject may say how far
-- before their due time its reminders may start when a burst cannot be sent
-- in time at the channel's rate (`early_window_ms`, NULL: the configured
-- `[reminders] early_window_ms`), and that its reminders still go out after it
-- started (`send_late`, false: they end `expired`). Planning finds the
-- subjects about to start through `subjects_start` (0018). Both columns are
-- added without a rewrite (a constant default).
ALTER TABLE subjects ADD COLUMN early_window_ms BIGINT;
ALTER TABLE subjects ADD COLUMN send_late BOOLEAN NOT NULL DEFAULT false;
