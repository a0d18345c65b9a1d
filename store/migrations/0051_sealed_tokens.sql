-- Group executor tokens may be stored sealed (AES-GCM, see
-- internal/secretbox), which is longer than the token itself. SQLite does
-- not enforce VARCHAR lengths.
{{MYSQL_ONLY}} ALTER TABLE job_groups MODIFY access_token VARCHAR(1024) NOT NULL DEFAULT '';
{{POSTGRES_ONLY}} ALTER TABLE job_groups ALTER COLUMN access_token TYPE VARCHAR(1024);
