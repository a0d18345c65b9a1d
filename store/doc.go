// Package store is Ringjob's one storage seam: MariaDB 10.6+ (through the MySQL
// driver; MySQL 8 and Aurora MySQL are not supported: migrations and the
// pre-read use MariaDB-only statements) or PostgreSQL (through pgx) for
// production and for coordination between replicas, and an embedded SQLite
// (pure Go) for single-node use. SQL lives here only, written once in the
// form MySQL and SQLite share; the differences between the dialects live in
// dialect.go and postgres.go, and PostgreSQL's connections translate
// placeholders, INSERT IGNORE and LastInsertId (pgconn.go).
//
// Migrations are embedded (migrations/NNNN_name.sql, with dialect tokens:
// a statement whose form differs is written once per database, marked
// {{MYSQL_ONLY}}, {{SQLITE_ONLY}}, {{POSTGRES_ONLY}}), versioned in
// schema_migrations, and additive.
//
// The fire ledger is the runs table: one row per fire of a job on a shard,
// unique on (job, scheduled time, shard, attempt) for schedule-derived fires.
// Every state change of a run is a compare-and-set on its row. Writes that
// happen per fire are batched (multi-row INSERT, CASE updates, IN lists),
// because single-row autocommit writes cap a 2-core MariaDB near 12k rows/s.
//
// Times are stored as epoch milliseconds (BIGINT) in every dialect.
package store
