-- Placeholder: number 30 belongs to the templates migration on main
-- (`0030_templates`). This branch keeps the numbering contiguous with a no-op;
-- at the merge main's file replaces this one (same number, same place in the
-- list), and a database migrated on this branch alone is a development one.
SELECT 1;
