-- The console's jobs list sorts by name (keyset paging on name, id).
CREATE INDEX jobs_name ON jobs (name, id);
