-- Workflows: DAGs of jobs. A workflow's definition (nodes, edges, start
-- rules, overrides) is JSON checked by internal/workflow; its schedule
-- columns mean what the jobs' columns of the same names mean.
CREATE TABLE workflows (
  id {{AUTO_ID}},
  group_id BIGINT NOT NULL,
  name VARCHAR(255) NOT NULL,
  description {{LONGTEXT}} NOT NULL,
  definition {{LONGTEXT}} NOT NULL,
  timeout_sec INT NOT NULL DEFAULT 0,
  schedule_type VARCHAR(16) NOT NULL DEFAULT 'none',
  schedule_conf VARCHAR(255) NOT NULL DEFAULT '',
  time_zone VARCHAR(64) NOT NULL DEFAULT 'UTC',
  misfire_policy VARCHAR(32) NOT NULL DEFAULT 'do_nothing',
  block_strategy VARCHAR(32) NOT NULL DEFAULT 'SERIAL_EXECUTION',
  enabled TINYINT NOT NULL DEFAULT 0,
  next_fire_ms BIGINT NOT NULL DEFAULT 0,
  version BIGINT NOT NULL DEFAULT 1,
  created_ms BIGINT NOT NULL,
  updated_ms BIGINT NOT NULL
) {{TABLE}};
CREATE UNIQUE INDEX workflows_name ON workflows (group_id, name);
CREATE INDEX workflows_due ON workflows (enabled, next_fire_ms);

-- A workflow run keeps the definition it started with, so an edit of the
-- workflow never changes a run under way. A repeated idempotency key finds
-- the earlier run (unique per workflow; NULL for none). A scheduled fire's
-- key is derived from its fire time, so a fire makes one run whichever
-- replica makes it.
CREATE TABLE workflow_runs (
  id {{AUTO_ID}},
  workflow_id BIGINT NOT NULL,
  group_id BIGINT NOT NULL,
  state VARCHAR(16) NOT NULL,
  trigger_type VARCHAR(16) NOT NULL,
  definition {{LONGTEXT}} NOT NULL,
  input {{LONGTEXT}} NOT NULL,
  idempotency_key VARCHAR(128) NULL,
  block_strategy VARCHAR(32) NOT NULL DEFAULT 'SERIAL_EXECUTION',
  timeout_sec INT NOT NULL DEFAULT 0,
  started_ms BIGINT NOT NULL DEFAULT 0,
  cancel_requested TINYINT NOT NULL DEFAULT 0,
  created_ms BIGINT NOT NULL,
  finished_ms BIGINT NOT NULL DEFAULT 0,
  message {{LONGTEXT}} NOT NULL
) {{TABLE}};
CREATE UNIQUE INDEX workflow_runs_key ON workflow_runs (workflow_id, idempotency_key);
-- The engine's scan: the runs queued or running.
CREATE INDEX workflow_runs_state ON workflow_runs (state, id);
CREATE INDEX workflow_runs_workflow ON workflow_runs (workflow_id, id);

-- One row per attempt of a node of a workflow run. The unique key makes
-- each attempt exist once, whichever replica decides it; the attempt's run
-- is triggered with an idempotency key derived from the row, so it exists
-- once too. superseded rows are history: a retried node's descendants.
CREATE TABLE workflow_node_runs (
  id {{AUTO_ID}},
  workflow_run_id BIGINT NOT NULL,
  node VARCHAR(64) NOT NULL,
  attempt INT NOT NULL,
  -- the attempt's place in its series of automatic retries (1 = first)
  try_no INT NOT NULL DEFAULT 1,
  state VARCHAR(16) NOT NULL,
  run_id BIGINT NOT NULL DEFAULT 0,
  superseded TINYINT NOT NULL DEFAULT 0,
  output {{LONGTEXT}} NOT NULL,
  message {{LONGTEXT}} NOT NULL,
  created_ms BIGINT NOT NULL,
  started_ms BIGINT NOT NULL DEFAULT 0,
  finished_ms BIGINT NOT NULL DEFAULT 0
) {{TABLE}};
CREATE UNIQUE INDEX workflow_node_runs_attempt ON workflow_node_runs (workflow_run_id, node, attempt);
CREATE INDEX workflow_node_runs_run ON workflow_node_runs (run_id);
