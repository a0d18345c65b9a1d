-- What the console's overview needs: when an executor first registered
-- (kept across its heartbeats), and job counts by enabled without a scan.
ALTER TABLE executor_registry ADD COLUMN registered_ms BIGINT NOT NULL DEFAULT 0;
UPDATE executor_registry SET registered_ms = updated_ms;
CREATE INDEX jobs_enabled ON jobs (enabled, group_id);
