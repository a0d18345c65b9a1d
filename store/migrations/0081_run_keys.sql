-- Idempotency keys in a table of their own: a repeated key for the same job
-- finds its earlier run here. The runs table may then be partitioned by time
-- (retention.partitioned), which a unique key on (job_id, idempotency_key)
-- in runs would forbid. Rows go with their run (retention, job delete).
CREATE TABLE run_keys (
  job_id BIGINT NOT NULL,
  idempotency_key VARCHAR(128) NOT NULL,
  run_id BIGINT NOT NULL,
  created_ms BIGINT NOT NULL,
  PRIMARY KEY (job_id, idempotency_key)
) {{TABLE}};

CREATE INDEX run_keys_run ON run_keys (run_id);

INSERT INTO run_keys (job_id, idempotency_key, run_id, created_ms)
  SELECT job_id, idempotency_key, id, created_ms FROM runs WHERE idempotency_key IS NOT NULL;
