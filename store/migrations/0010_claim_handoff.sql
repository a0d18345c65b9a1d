-- claim_token: the random token of the statement that last claimed (or took
-- over, or handed off) the run, so a claimer reads back exactly the rows it
-- changed. handed_ms: when the run was handed to its target (0 = claimed
-- but not yet sent), so a takeover tells "claimed, not sent" (send it) from
-- "maybe sent" (delivery unknown).
ALTER TABLE runs ADD COLUMN claim_token BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN handed_ms BIGINT NOT NULL DEFAULT 0;
