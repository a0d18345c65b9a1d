-- alarm_lease_ms: until when a replica holds the sending of a run's alarm
-- (followup = 3, alarm pending). A replica that dies while sending leaves
-- the lease to run out; then another sends it (at least once).
ALTER TABLE runs ADD COLUMN alarm_lease_ms BIGINT NOT NULL DEFAULT 0;
