-- HTTP executors: the registry of live executors (upserted on each beat),
-- per-group executor settings, and server settings such as the generated
-- executor access token.
CREATE TABLE executor_registry (
  id {{AUTO_ID}},
  app_name VARCHAR(64) NOT NULL,
  address VARCHAR(255) NOT NULL,
  updated_ms BIGINT NOT NULL
) {{TABLE}};

CREATE UNIQUE INDEX executor_registry_app_address ON executor_registry (app_name, address);
CREATE INDEX executor_registry_updated ON executor_registry (updated_ms);

ALTER TABLE job_groups ADD COLUMN access_token VARCHAR(255) NOT NULL DEFAULT '';
ALTER TABLE job_groups ADD COLUMN protocol VARCHAR(16) NOT NULL DEFAULT '';

CREATE TABLE settings (
  name VARCHAR(64) NOT NULL PRIMARY KEY,
  value {{LONGTEXT}} NOT NULL,
  updated_ms BIGINT NOT NULL
) {{TABLE}};
