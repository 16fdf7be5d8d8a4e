-- Segments (issue 39): when a segment ended (done, partial, abandoned,
-- expired or cancelled), set in the transaction that ends it. Segments that
-- ended before this migration take the time of their last change, which is
-- when they ended (a partial segment the sweeper later marked handled may
-- show that later time).
ALTER TABLE segments ADD COLUMN finished_at INTEGER;
UPDATE segments SET finished_at = updated_at WHERE state NOT IN ('pending', 'running');
