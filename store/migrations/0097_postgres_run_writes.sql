-- PostgreSQL only: cheaper writes of runs on the hot path.
-- A PostgreSQL UPDATE writes a new row version and, unless it is a HOT
-- update (no indexed column changed and room on the same page), a new
-- entry in every index of the table. Every write of a run changes its
-- state, a column of runs_owner_state_time, so none is HOT; but a partial
-- index takes an entry only for row versions that match its predicate.
-- runs_followup is read only for runs whose follow-up is set (followup = ?,
-- which implies IS NOT NULL, so every query can use the partial index):
-- the insert, the hand-off and the outcome of a run without one (nearly
-- every run) no longer write to it. MariaDB has no partial indexes.
{{POSTGRES_ONLY}} DROP INDEX runs_followup;
{{POSTGRES_ONLY}} CREATE INDEX runs_followup ON runs (followup) WHERE followup IS NOT NULL;
-- (A fillfactor of 70 on jobs, for HOT last-outcome writes, was measured
-- and left out: HOT updates of jobs rose from 35 to 46 %, PostgreSQL's CPU
-- did not change, and the bigger table was read by sequential scans.)
