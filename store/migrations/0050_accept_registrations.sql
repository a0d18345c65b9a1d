-- Whether registered HTTP executors may join a group. Groups that exist
-- already keep accepting them unless all their static members are other
-- kinds (Lambda functions, local commands): registrations must never take
-- over such a group.
ALTER TABLE job_groups ADD COLUMN accept_registrations TINYINT NOT NULL DEFAULT 1;
UPDATE job_groups SET accept_registrations = 0 WHERE members <> '[]' AND members NOT LIKE '%http://%' AND members NOT LIKE '%https://%';
