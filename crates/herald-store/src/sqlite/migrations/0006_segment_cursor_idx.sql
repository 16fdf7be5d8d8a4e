-- Index columns end in `_idx` on both backends (`end` is reserved in SQL), so
-- one column list serves both. Renaming rewrites only the schema, no row.
ALTER TABLE segments RENAME COLUMN cursor TO cursor_idx;
