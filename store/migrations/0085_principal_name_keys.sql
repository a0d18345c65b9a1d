-- name_key: a principal's name in the form names are compared in
-- (principalname.Key: Unicode NFKC, then case-folded), unique, so that
-- "Admin", "admin" and fullwidth "ａｄｍｉｎ" are one name on every database,
-- whatever its collation (the column is binary: utf8mb4_bin on MySQL and
-- MariaDB, SQLite's BINARY). It replaces the unique index on name, which
-- compared by each database's own rule. 0084 refused to go on if existing
-- names collide; 0086 fills the keys of existing rows.
ALTER TABLE principals ADD COLUMN name_key VARCHAR(255) NULL;
{{MYSQL_ONLY}}DROP INDEX principals_name ON principals;
{{SQLITE_ONLY}}DROP INDEX principals_name;
{{POSTGRES_ONLY}}DROP INDEX principals_name;
CREATE UNIQUE INDEX principals_name_key ON principals (name_key);
