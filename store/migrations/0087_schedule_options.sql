-- What cloud schedulers offer (EventBridge Scheduler's schedule options):
-- an active window (no fire before active_from_ms nor after
-- active_until_ms; 0 = open), a flexible window (each fire moved a per-job
-- offset of up to flex_window_min minutes later; the run keeps the offset in
-- window_offset_ms, so its schedule time is scheduled_ms - window_offset_ms),
-- a maximum event age (no retry nor catch-up of a fire older than
-- max_event_age_sec; 0 = no limit), what happens after the last fire
-- (after_completion '' keeps the job stopped, 'delete' deletes it), and a
-- failure destination (where a run that failed for good, or a misfired
-- fire, is delivered as a JSON record; the group's applies when the job has
-- none).
ALTER TABLE jobs ADD COLUMN active_from_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN active_until_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN flex_window_min INT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN max_event_age_sec INT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN after_completion VARCHAR(16) NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN failure_destination VARCHAR(1024) NOT NULL DEFAULT '';
ALTER TABLE job_groups ADD COLUMN failure_destination VARCHAR(1024) NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN window_offset_ms INT NOT NULL DEFAULT 0;

-- Failure deliveries: one row per run whose record is owed to a failure
-- destination (the run failed, timed out or was lost after its last retry,
-- or its fire misfired). Written before the run's follow-up is marked done,
-- so a replica dying in between leaves the follow-up to make it again, and
-- the unique run_id keeps that from owing it twice. Sent at least once,
-- under a lease, retried with backoff until delivered_ms is set.
CREATE TABLE failure_deliveries (
  id {{AUTO_ID}},
  run_id BIGINT NOT NULL,
  destination VARCHAR(1024) NOT NULL,
  record {{LONGTEXT}} NOT NULL,
  attempts INT NOT NULL DEFAULT 0,
  next_ms BIGINT NOT NULL,
  lease_until_ms BIGINT NOT NULL DEFAULT 0,
  delivered_ms BIGINT NOT NULL DEFAULT 0,
  last_error VARCHAR(1024) NOT NULL DEFAULT '',
  created_ms BIGINT NOT NULL
) {{TABLE}};
CREATE UNIQUE INDEX failure_deliveries_run ON failure_deliveries (run_id);
CREATE INDEX failure_deliveries_due ON failure_deliveries (delivered_ms, next_ms);
