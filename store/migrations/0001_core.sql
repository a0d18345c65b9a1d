-- Core scheduling tables: lock partitions, nodes, groups, jobs and the fire ledger (runs).
-- Tokens in {{...}} are filled in per dialect (store/dialect.go, store/postgres.go).
-- A statement whose form differs between databases is written once per
-- database, each line marked {{MYSQL_ONLY}}, {{SQLITE_ONLY}} or {{POSTGRES_ONLY}}.

CREATE TABLE lock_partitions (
  id INT NOT NULL PRIMARY KEY,
  holder VARCHAR(64) NOT NULL DEFAULT '',
  held_ms BIGINT NOT NULL DEFAULT 0
) {{TABLE}};

CREATE TABLE nodes (
  id VARCHAR(64) NOT NULL PRIMARY KEY,
  host VARCHAR(255) NOT NULL DEFAULT '',
  started_ms BIGINT NOT NULL,
  heartbeat_ms BIGINT NOT NULL,
  stopped_ms BIGINT NOT NULL DEFAULT 0,
  reaped_ms BIGINT NOT NULL DEFAULT 0
) {{TABLE}};

CREATE TABLE job_groups (
  id {{AUTO_ID}},
  app_name VARCHAR(64) NOT NULL,
  title VARCHAR(128) NOT NULL DEFAULT '',
  members {{LONGTEXT}} NOT NULL,
  created_ms BIGINT NOT NULL,
  updated_ms BIGINT NOT NULL
) {{TABLE}};

CREATE UNIQUE INDEX job_groups_app_name ON job_groups (app_name);

CREATE TABLE jobs (
  id {{AUTO_ID}},
  group_id BIGINT NOT NULL,
  name VARCHAR(255) NOT NULL,
  description {{LONGTEXT}} NOT NULL,
  schedule_type VARCHAR(16) NOT NULL DEFAULT 'none',
  schedule_conf VARCHAR(255) NOT NULL DEFAULT '',
  time_zone VARCHAR(64) NOT NULL DEFAULT 'UTC',
  misfire_policy VARCHAR(32) NOT NULL DEFAULT 'do_nothing',
  handler VARCHAR(255) NOT NULL DEFAULT '',
  params {{LONGTEXT}} NOT NULL,
  route_strategy VARCHAR(32) NOT NULL DEFAULT 'first',
  block_strategy VARCHAR(32) NOT NULL DEFAULT 'SERIAL_EXECUTION',
  timeout_sec INT NOT NULL DEFAULT 0,
  retry_count INT NOT NULL DEFAULT 0,
  shard_count INT NOT NULL DEFAULT 1,
  enabled TINYINT NOT NULL DEFAULT 0,
  lock_partition INT NOT NULL DEFAULT 0,
  next_fire_ms BIGINT NOT NULL DEFAULT 0,
  last_fire_ms BIGINT NOT NULL DEFAULT 0,
  created_ms BIGINT NOT NULL,
  updated_ms BIGINT NOT NULL
) {{TABLE}};

-- The due-jobs query: lock_partition IN (...) AND next_fire_ms BETWEEN 1 AND ?.
CREATE INDEX jobs_due ON jobs (lock_partition, next_fire_ms);
CREATE INDEX jobs_group ON jobs (group_id);

CREATE TABLE runs (
  id {{AUTO_ID}},
  job_id BIGINT NOT NULL,
  group_id BIGINT NOT NULL,
  scheduled_ms BIGINT NOT NULL,
  shard_index INT NOT NULL DEFAULT 0,
  shard_total INT NOT NULL DEFAULT 1,
  attempt INT NOT NULL DEFAULT 0,
  -- 1 for fires derived from the schedule (unique per fire time), NULL for manual,
  -- API and child triggers (several may share a millisecond).
  sched_fire TINYINT NULL,
  trigger_type VARCHAR(16) NOT NULL,
  state VARCHAR(16) NOT NULL,
  owner VARCHAR(64) NOT NULL,
  target VARCHAR(512) NOT NULL DEFAULT '',
  handler VARCHAR(255) NOT NULL DEFAULT '',
  params {{LONGTEXT}} NOT NULL,
  created_ms BIGINT NOT NULL,
  dispatched_ms BIGINT NOT NULL DEFAULT 0,
  finished_ms BIGINT NOT NULL DEFAULT 0,
  late TINYINT NOT NULL DEFAULT 0,
  result_code INT NOT NULL DEFAULT 0,
  message {{LONGTEXT}} NOT NULL,
  idempotency_key VARCHAR(128) NULL
) {{TABLE}};

CREATE UNIQUE INDEX runs_fire ON runs (job_id, scheduled_ms, shard_index, attempt, sched_fire);
CREATE UNIQUE INDEX runs_idempotency ON runs (job_id, idempotency_key);
CREATE INDEX runs_owner_state ON runs (owner, state);
