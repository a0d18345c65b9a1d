-- A workflow's active window, as a job's (0087): no scheduled start before
-- active_from_ms nor after active_until_ms; 0 = open.
ALTER TABLE workflows ADD COLUMN active_from_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE workflows ADD COLUMN active_until_ms BIGINT NOT NULL DEFAULT 0;
