-- A kill in flight to a target other than a local process: one row per run
-- the kill stops, from the claim before the kill is sent until its answer is
-- recorded. The primary key is the claim: a second kill of a run whose kill
-- is in flight (a second click, another replica) finds the row and sends
-- nothing. A result the target reports meanwhile is held here (held_state
-- and the rest) and answered at once; the kill's answer decides: accepted,
-- the run is killed and the held result only logged; refused, the held
-- result is recorded as it came. deadline_ms decides for a sender that died
-- before the answer (any replica's kill service settles rows past it as
-- refused), so the outcome is never left in one replica's memory.
CREATE TABLE run_kills (
  run_id BIGINT NOT NULL PRIMARY KEY,
  deadline_ms BIGINT NOT NULL,
  held_state VARCHAR(16) NULL,
  held_code INT NOT NULL DEFAULT 0,
  held_message {{LONGTEXT}} NULL,
  held_ms BIGINT NOT NULL DEFAULT 0
) {{TABLE}};

CREATE INDEX run_kills_deadline ON run_kills (deadline_ms);
