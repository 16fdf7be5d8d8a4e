-- Retention (issue 17) finds what is old through an index on its age, never
-- a scan: finished timers by their last change (reminders' timers go with
-- their subject), ended jobs and tasks by when they ended, audiences by when
-- they were made, subjects by their start.
CREATE INDEX timers_finished ON timers (updated_at, id)
    WHERE state >= 2 AND kind <> 'reminder';
CREATE INDEX jobs_finished ON jobs (finished_at, id) WHERE state <> 'running';
CREATE INDEX tasks_ended ON tasks (finished_at, id)
    WHERE state NOT IN ('pending', 'running');
CREATE INDEX audiences_created ON audiences (created_at, id);
CREATE INDEX subjects_start ON subjects (start_at);
