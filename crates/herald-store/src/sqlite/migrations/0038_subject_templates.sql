-- A subject's own reminder templates (issue 39 §1): a JSON object from
-- channel type to template reference (`{"wechat": {"name": "n", "version": 2}}`),
-- NULL when the subject has none and its reminders take
-- `[reminders.templates]`. Read with the subject when its reminders are
-- sent, so no index.
ALTER TABLE subjects ADD COLUMN templates TEXT;
