-- The attempts of a run when routing probed or failed over: a JSON array of
-- {target, op, error, at_ms}. NULL when the first dispatch went through.
ALTER TABLE runs ADD COLUMN attempts {{LONGTEXT}} NULL;
