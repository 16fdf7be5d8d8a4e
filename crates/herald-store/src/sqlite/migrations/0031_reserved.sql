-- Reserved: number 0031 belongs to the reminder-expiry work on another
-- branch; this placeholder keeps the list contiguous until it is merged
-- (replace this file with that migration then).
SELECT 1;
