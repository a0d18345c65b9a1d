-- The unique index runs_idempotency (job_id, idempotency_key) is redundant
-- since run_keys (0081) holds the idempotency keys: a key is claimed there,
-- in the transaction that inserts the run, before the run exists. Every
-- insert and every retention delete paid for a fourth secondary B-tree of
-- runs; queries by job_id use runs_fire, whose first column is job_id.
{{MYSQL_ONLY}} DROP INDEX IF EXISTS runs_idempotency ON runs;
{{SQLITE_ONLY}} DROP INDEX IF EXISTS runs_idempotency;
{{POSTGRES_ONLY}} DROP INDEX IF EXISTS runs_idempotency;
