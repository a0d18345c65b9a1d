-- Pinned targets: a JSON array of target URIs that restricts a job's
-- candidates before routing. NULL or empty = all candidates.
ALTER TABLE jobs ADD COLUMN pinned_targets {{LONGTEXT}} NULL;
