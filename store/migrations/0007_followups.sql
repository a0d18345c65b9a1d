-- What follows a run: retries with backoff, child jobs, alarms, lost runs.
ALTER TABLE jobs ADD COLUMN retry_backoff VARCHAR(16) NOT NULL DEFAULT 'fixed';
ALTER TABLE jobs ADD COLUMN retry_delay_sec INT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN retry_max_delay_sec INT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN child_job_ids VARCHAR(1024) NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN max_in_flight INT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN alarm_channels VARCHAR(1024) NOT NULL DEFAULT '';
-- 'failing' after a failure alarm, until a success sends the recovery.
ALTER TABLE jobs ADD COLUMN alarm_state VARCHAR(16) NOT NULL DEFAULT 'ok';
-- The run this one retries (0 = none).
ALTER TABLE runs ADD COLUMN retry_of BIGINT NOT NULL DEFAULT 0;
-- Follow-up of a failed run: NULL none needed (every run until it fails),
-- 0 pending (set by the write that records the failure), 1 done (claimed by
-- compare-and-set). Successes never touch it, so the hot path pays no index
-- write for it.
ALTER TABLE runs ADD COLUMN followup TINYINT NULL;
-- XXL-JOB's alarm states: 0 none yet, 1 not needed, 2 sent, 3 failed.
ALTER TABLE runs ADD COLUMN alarm_status TINYINT NOT NULL DEFAULT 0;
-- Serves the failure scan (followup = 0). Running and in-flight runs are
-- found through runs_owner_state.
CREATE INDEX runs_followup ON runs (followup);
-- The recovery check reads the failing jobs every second.
CREATE INDEX jobs_alarm_state ON jobs (alarm_state);
