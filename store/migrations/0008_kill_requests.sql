-- A kill asked for on any replica: the replica that runs the run (its owner)
-- sees the request and stops it (local processes live on one replica only).
ALTER TABLE runs ADD COLUMN kill_requested TINYINT NOT NULL DEFAULT 0;
