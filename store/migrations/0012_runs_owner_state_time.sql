-- Each replica sweeps its own runs every 10 s: scheduled runs overdue by
-- more than a sweep (store.RunTakeOver with DueBeforeMs, oldest first), and
-- its dispatching ones. With (owner, state) alone the first read every
-- scheduled run of the replica (a whole pre-read window of fires) and
-- sorted them; with scheduled_ms in the index it reads the overdue ones
-- only, in order. The new index serves everything the old one did (its
-- first two columns are the same), so the old one goes: one index write
-- less per run state change. Not unique, so a partitioned runs table
-- (retention.partitioned) needs no partition column in it.
CREATE INDEX runs_owner_state_time ON runs (owner, state, scheduled_ms);
{{MYSQL_ONLY}} DROP INDEX runs_owner_state ON runs;
{{SQLITE_ONLY}} DROP INDEX runs_owner_state;
{{POSTGRES_ONLY}} DROP INDEX runs_owner_state;
