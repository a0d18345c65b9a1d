package store

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// dialect holds every difference between MySQL and SQLite. Nothing outside
// this file branches on the database kind.
type dialect interface {
	// name is "mysql" or "sqlite".
	name() string
	// ddl fills the dialect tokens of a migration.
	ddl(sql string) string
	// skipLocked is appended to the lock-row SELECT.
	skipLocked() string
	// forUpdate is appended to a SELECT in a transaction that must hold
	// the rows it read until it ends.
	forUpdate() string
	// insertIgnore is the INSERT verb that skips rows violating a unique key.
	insertIgnore() string
	// maxParams is the largest number of placeholders one statement may carry.
	maxParams() int
	// namedLocks reports whether the database has session-scoped named locks
	// (MySQL GET_LOCK), which free themselves when the holder's connection dies.
	namedLocks() bool
	// isDuplicate reports whether err is a unique-key violation.
	isDuplicate(err error) bool
	// classify tells a transient failure (lock conflict, lost connection)
	// from a permanent one (see retry.go).
	classify(err error) errClass
	// scheduleTxOptions are the options of the locked pre-read transaction.
	scheduleTxOptions() *sql.TxOptions
	// idleTxTimeout is the statement that makes the database end the
	// session of a transaction left idle for sec seconds ("" when the
	// database has none).
	idleTxTimeout(sec int) string
	// tableExists is a query with one placeholder, a table name, that
	// counts the tables of that name in the current schema.
	tableExists() string
	// reportUpsert is the clause after a run_reports INSERT that adds the
	// new counts to an existing bucket row.
	reportUpsert() string
}

type mysqlDialect struct{}

func (mysqlDialect) name() string { return "mysql" }
func (mysqlDialect) ddl(sql string) string {
	return strings.NewReplacer(
		"{{AUTO_ID}}", "BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY",
		"{{TABLE}}", "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
		"{{LONGTEXT}}", "MEDIUMTEXT",
		"{{MYSQL_ONLY}}", "",
		"{{SQLITE_ONLY}}", "-- ",
	).Replace(sql)
}
func (mysqlDialect) skipLocked() string   { return " FOR UPDATE SKIP LOCKED" }
func (mysqlDialect) forUpdate() string    { return " FOR UPDATE" }
func (mysqlDialect) insertIgnore() string { return "INSERT IGNORE" }
func (mysqlDialect) maxParams() int       { return 60000 }
func (mysqlDialect) namedLocks() bool     { return true }

// READ COMMITTED keeps the locked pre-read from taking gap locks on runs and jobs.
func (mysqlDialect) scheduleTxOptions() *sql.TxOptions {
	return &sql.TxOptions{Isolation: sql.LevelReadCommitted}
}
func (mysqlDialect) classify(err error) errClass { return classifyMySQL(err) }

// MariaDB's idle_transaction_timeout (MySQL has none: the statement fails
// and the transaction goes on without it).
func (mysqlDialect) idleTxTimeout(sec int) string {
	return fmt.Sprintf("SET SESSION idle_transaction_timeout = %d", sec)
}
func (mysqlDialect) tableExists() string {
	return "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?"
}
func (mysqlDialect) reportUpsert() string {
	return ` ON DUPLICATE KEY UPDATE succeeded = succeeded + VALUES(succeeded), failed = failed + VALUES(failed),
 timed_out = timed_out + VALUES(timed_out), killed = killed + VALUES(killed), lost = lost + VALUES(lost),
 misfired = misfired + VALUES(misfired), duration_sum_ms = duration_sum_ms + VALUES(duration_sum_ms),
 duration_max_ms = GREATEST(duration_max_ms, VALUES(duration_max_ms))`
}
func (mysqlDialect) isDuplicate(err error) bool {
	return err != nil && strings.Contains(err.Error(), "Error 1062")
}

type sqliteDialect struct{}

func (sqliteDialect) name() string { return "sqlite" }
func (sqliteDialect) ddl(sql string) string {
	return strings.NewReplacer(
		"{{AUTO_ID}}", "INTEGER PRIMARY KEY AUTOINCREMENT",
		"{{TABLE}}", "",
		"{{LONGTEXT}}", "TEXT",
		// A statement SQLite does not need (column widths): a comment line.
		"{{MYSQL_ONLY}}", "-- ",
		// A statement whose MySQL form differs: written twice.
		"{{SQLITE_ONLY}}", "",
	).Replace(sql)
}

// SQLite has one writer at a time: the transaction itself is the lock
// (the connection is opened with _txlock=immediate).
func (sqliteDialect) skipLocked() string                { return "" }
func (sqliteDialect) forUpdate() string                 { return "" }
func (sqliteDialect) insertIgnore() string              { return "INSERT OR IGNORE" }
func (sqliteDialect) maxParams() int                    { return 30000 }
func (sqliteDialect) namedLocks() bool                  { return false }
func (sqliteDialect) scheduleTxOptions() *sql.TxOptions { return nil }
func (sqliteDialect) idleTxTimeout(int) string          { return "" }
func (sqliteDialect) classify(err error) errClass {
	if errors.Is(err, errRaced) {
		return errConflict
	}
	if err != nil && (strings.Contains(err.Error(), "SQLITE_BUSY") || strings.Contains(err.Error(), "database is locked")) {
		return errConflict
	}
	return errPermanent
}
func (sqliteDialect) tableExists() string {
	return "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
}
func (sqliteDialect) reportUpsert() string {
	return ` ON CONFLICT (resolution, group_id, job_id, bucket_ms) DO UPDATE SET succeeded = succeeded + excluded.succeeded,
 failed = failed + excluded.failed, timed_out = timed_out + excluded.timed_out, killed = killed + excluded.killed,
 lost = lost + excluded.lost, misfired = misfired + excluded.misfired, duration_sum_ms = duration_sum_ms + excluded.duration_sum_ms,
 duration_max_ms = MAX(duration_max_ms, excluded.duration_max_ms)`
}
func (sqliteDialect) isDuplicate(err error) bool {
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}
