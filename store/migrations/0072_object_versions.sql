-- A version per job and group, bumped by every edit through the API. It is
-- the object's ETag, and If-Match writes are one conditional UPDATE
-- (WHERE version = ?), so two editors can never both win. Fire times the
-- scheduler advances do not bump it.
ALTER TABLE jobs ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
ALTER TABLE job_groups ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
