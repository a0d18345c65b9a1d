-- The jobs list filters by each job's last final outcome (the console's
-- "last outcome" filter). The write that records a run's final outcome sets
-- these in the same transaction (store/outcomes.go); last_run_id keeps a
-- later outcome of an older run from overwriting a newer one.
-- last_outcome '' = the job has never finished a run.
ALTER TABLE jobs ADD COLUMN last_outcome VARCHAR(16) NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN last_run_id BIGINT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN last_finished_ms BIGINT NOT NULL DEFAULT 0;

-- Backfill from each job's newest finished run (by fire time, served by
-- runs_fire: the scan stops at the first finished run from the newest).
UPDATE jobs SET last_run_id = COALESCE((SELECT r.id FROM runs r
  WHERE r.job_id = jobs.id AND r.state IN ('succeeded', 'failed', 'timed_out', 'killed', 'lost', 'misfired')
  ORDER BY r.scheduled_ms DESC LIMIT 1), 0);
UPDATE jobs SET last_outcome = (SELECT r.state FROM runs r WHERE r.id = jobs.last_run_id),
  last_finished_ms = (SELECT r.finished_ms FROM runs r WHERE r.id = jobs.last_run_id)
  WHERE last_run_id > 0;

-- Filter plus keyset paging, by id and by name (a changed outcome moves a
-- job in these; a repeated one touches no index).
CREATE INDEX jobs_outcome ON jobs (last_outcome, id);
CREATE INDEX jobs_outcome_name ON jobs (last_outcome, name, id);
