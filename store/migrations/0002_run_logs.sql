-- Central run logs: output of local processes (and other targets without a
-- log of their own), stored in chunks so any replica can show it.
CREATE TABLE run_logs (
  run_id BIGINT NOT NULL,
  seq INT NOT NULL,
  first_line INT NOT NULL,
  line_count INT NOT NULL,
  content {{LONGTEXT}} NOT NULL,
  PRIMARY KEY (run_id, seq)
) {{TABLE}};
