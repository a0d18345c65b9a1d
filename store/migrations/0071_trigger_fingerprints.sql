-- The fingerprint (SHA-256 of the normalised body) of the first trigger
-- request that used an idempotency key for a job, so a reused key with a
-- different body is refused (422) instead of silently answering with the
-- first run. Rows go with their job.
CREATE TABLE trigger_fingerprints (
  job_id BIGINT NOT NULL,
  idempotency_key VARCHAR(128) NOT NULL,
  fingerprint VARCHAR(64) NOT NULL,
  created_ms BIGINT NOT NULL,
  PRIMARY KEY (job_id, idempotency_key)
) {{TABLE}};
