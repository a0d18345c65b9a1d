package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// dialect holds the differences between MySQL, PostgreSQL and SQLite in the
// statements every database runs. Features of one database (day partitions,
// the application user, MySQL's multi-table UPDATE) check name() themselves. (PostgreSQL's
// placeholders, INSERT IGNORE and LastInsertId are translated by its
// connections: pgconn.go.)
type dialect interface {
	// name is "mysql", "postgres" or "sqlite".
	name() string
	// ddl fills the dialect tokens of a migration.
	ddl(sql string) string
	// ddlHint follows the error of a migration statement: what to do when
	// a statement written for the other dialects fails here.
	ddlHint() string
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
	// (MySQL GET_LOCK, PostgreSQL advisory locks), which free themselves when
	// the holder's connection dies.
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
	// rowLocks reports whether SELECT ... FOR UPDATE locks rows (SQLite's
	// transaction is the lock).
	rowLocks() bool
	// handoffRoom reports whether a row grown in place by an UPDATE costs
	// page splits, so schedule-derived runs reserve room for their hand-off
	// (MySQL/MariaDB: InnoDB updates in place; PostgreSQL writes a new row
	// version whatever its size, SQLite rewrites the row).
	handoffRoom() bool
	// deleteAftermath is the work a deleted row costs after its statement
	// commits, as a multiple of the statement's time (Store.DeleteAftermath).
	deleteAftermath() float64
	// locks are the session-level named locks (namedLocks); nil without.
	locks() namedLocker
	// skipDuplicate is the clause after an INSERT that makes a row
	// violating a unique key insert nothing instead of failing, where a
	// failed statement would end the transaction around it (PostgreSQL
	// aborts the whole transaction; "" elsewhere: the error is handled).
	skipDuplicate() string
	// liveRuns starts the condition of a query of a replica's unfinished
	// runs: MySQL/MariaDB find them through runs_owner_live (owner, live,
	// kill_requested, scheduled_ms; migration 0101), which only a query
	// naming live = 1 can use, and whose scheduled_ms a bound on it can use
	// only when kill_requested is named too (it is 0 or 1); "" elsewhere.
	liveRuns() string
	// firstInsertedID is the lowest id a multi-row INSERT of rows rows may
	// have given, from its result's LastInsertId: that is the first new id
	// on MySQL/MariaDB and PostgreSQL (pgconn.go), and the last on SQLite,
	// whose one writer gives consecutive ids. Every id of the statement is
	// at least this; a reader of the new rows by id range starts there.
	firstInsertedID(lastInsertID int64, rows int) int64
}

// querier is a connection or a pool, for the named-lock statements.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// namedLocker is a database's session-level named locks: held by one
// session (connection), freed when it ends. Names are scoped by the
// caller (they carry the schema).
type namedLocker interface {
	// get takes the lock on q (a pinned connection), waiting up to wait.
	get(ctx context.Context, q querier, name string, wait time.Duration) error
	// release frees a lock q holds.
	release(ctx context.Context, q querier, name string) error
	// heldHere reports whether q's own session holds the lock.
	heldHere(ctx context.Context, q querier, name string) (bool, error)
	// holder is the session that holds the lock (ok false: free).
	holder(ctx context.Context, q querier, name string) (session int64, ok bool, err error)
	// endSession ends a session of the database (fencing: its locks go free).
	endSession(ctx context.Context, q querier, session int64) error
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
		"{{POSTGRES_ONLY}}", "-- ",
	).Replace(sql)
}
func (mysqlDialect) ddlHint() string      { return "" }
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
func (mysqlDialect) rowLocks() bool           { return true }
func (mysqlDialect) handoffRoom() bool        { return true }
func (mysqlDialect) deleteAftermath() float64 { return 1 }
func (mysqlDialect) locks() namedLocker       { return mysqlLocks{} }
func (mysqlDialect) skipDuplicate() string    { return "" }
func (mysqlDialect) liveRuns() string         { return "live = 1 AND kill_requested IN (0, 1) AND " }
func (mysqlDialect) firstInsertedID(lastInsertID int64, _ int) int64 {
	return lastInsertID
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
		"{{POSTGRES_ONLY}}", "-- ",
	).Replace(sql)
}

func (sqliteDialect) ddlHint() string { return "" }

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
func (sqliteDialect) rowLocks() bool           { return false }
func (sqliteDialect) handoffRoom() bool        { return false }
func (sqliteDialect) deleteAftermath() float64 { return 0 }
func (sqliteDialect) locks() namedLocker       { return nil }
func (sqliteDialect) skipDuplicate() string    { return "" }
func (sqliteDialect) liveRuns() string         { return "" }
func (sqliteDialect) firstInsertedID(lastInsertID int64, rows int) int64 {
	return lastInsertID - int64(rows) + 1
}
func (sqliteDialect) isDuplicate(err error) bool {
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// mysqlLocks are MySQL's GET_LOCK locks.
type mysqlLocks struct{}

func (mysqlLocks) get(ctx context.Context, q querier, name string, wait time.Duration) error {
	var got sql.NullInt64
	if err := q.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", name, int(wait/time.Second)).Scan(&got); err != nil {
		return err
	}
	if !got.Valid || got.Int64 != 1 {
		return fmt.Errorf("lock %s is held by another session (GET_LOCK returned %v after %s)", name, got, wait)
	}
	return nil
}

func (mysqlLocks) release(ctx context.Context, q querier, name string) error {
	_, err := q.ExecContext(ctx, "SELECT RELEASE_LOCK(?)", name)
	return err
}

func (mysqlLocks) heldHere(ctx context.Context, q querier, name string) (bool, error) {
	var held sql.NullInt64
	err := q.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?) = CONNECTION_ID()", name).Scan(&held)
	return held.Valid && held.Int64 == 1, err
}

func (mysqlLocks) holder(ctx context.Context, q querier, name string) (int64, bool, error) {
	var holder sql.NullInt64
	if err := q.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?)", name).Scan(&holder); err != nil {
		return 0, false, err
	}
	return holder.Int64, holder.Valid, nil
}

func (mysqlLocks) endSession(ctx context.Context, q querier, session int64) error {
	_, err := q.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", session))
	return err
}
