-- PostgreSQL only: fewer index entries per write of a job.
-- The pre-read's advance of a job changes next_fire_ms, a column of
-- jobs_due, so on PostgreSQL it is never a HOT update: every advance writes
-- a new entry into each index of jobs (nine before this migration), once a
-- fire for an every-second job. Two of them need not take one:
-- jobs_group (group_id) is a prefix of the unique jobs_group_name
-- (group_id, name), which serves every lookup by group (PostgreSQL reads
-- an index by its leading column as MariaDB does); and jobs_alarm_state is
-- read only for the failing jobs (alarm_state = 'failing', written as a
-- constant so that the partial index matches), so it indexes only those.
-- MariaDB keeps both: there an advance only moves its jobs_due entry.
{{POSTGRES_ONLY}} DROP INDEX jobs_group;
{{POSTGRES_ONLY}} DROP INDEX jobs_alarm_state;
{{POSTGRES_ONLY}} CREATE INDEX jobs_alarm_state ON jobs (alarm_state) WHERE alarm_state <> 'ok';
