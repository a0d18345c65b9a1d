-- Data lifecycle: maintenance leases (one replica purges or rolls up at a
-- time), the run reports (aggregates that outlive the runs) and the roll-up's
-- runs still to count.

-- A lease is held by one replica until expires_ms; taking it is a
-- compare-and-set on the row, so it works the same on MySQL and SQLite.
CREATE TABLE maintenance_leases (
  name VARCHAR(64) NOT NULL PRIMARY KEY,
  holder VARCHAR(64) NOT NULL DEFAULT '',
  expires_ms BIGINT NOT NULL DEFAULT 0
) {{TABLE}};

-- Runs per bucket by outcome. resolution is 'm' (minute) or 'h' (hour);
-- bucket_ms is the bucket's start (UTC) of the runs' scheduled time. Three
-- levels share the table: job (group_id, job_id), group (group_id, job_id = 0)
-- and all (0, 0), so the dashboard reads one row per bucket whatever the
-- number of jobs. duration is finished - dispatched of the runs that ran.
CREATE TABLE run_reports (
  resolution CHAR(1) NOT NULL,
  group_id BIGINT NOT NULL,
  job_id BIGINT NOT NULL,
  bucket_ms BIGINT NOT NULL,
  succeeded BIGINT NOT NULL DEFAULT 0,
  failed BIGINT NOT NULL DEFAULT 0,
  timed_out BIGINT NOT NULL DEFAULT 0,
  killed BIGINT NOT NULL DEFAULT 0,
  lost BIGINT NOT NULL DEFAULT 0,
  misfired BIGINT NOT NULL DEFAULT 0,
  duration_sum_ms BIGINT NOT NULL DEFAULT 0,
  duration_max_ms BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (resolution, group_id, job_id, bucket_ms)
) {{TABLE}};

-- Serves the purge of old buckets.
CREATE INDEX run_reports_age ON run_reports (resolution, bucket_ms);

-- Runs the roll-up passed while they were not final yet: counted when they
-- finish (or dropped when they are deleted).
CREATE TABLE run_reports_pending (
  run_id BIGINT NOT NULL PRIMARY KEY
) {{TABLE}};
