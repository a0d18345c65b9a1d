-- A workflow node that fans out (shards, or one run per item of a list)
-- has several runs per attempt: run_ids lists them all (a JSON array;
-- run_id is the first), each made with an idempotency key derived from the
-- attempt and its index, so a repeated start finds them.
ALTER TABLE workflow_node_runs ADD COLUMN run_ids {{LONGTEXT}} NULL;
