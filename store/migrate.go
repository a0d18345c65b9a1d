package store

import (
	"context"
	"crypto/md5"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migration is one versioned change: SQL from migrations/NNNN_name.sql, or
// a data migration in Go (Data) for changes SQL cannot express.
type Migration struct {
	Version int
	Name    string
	SQL     string
	Data    DataMigration
}

// DataMigration rewrites stored data in Go, for example expressions whose
// syntax changed. It runs in one transaction with the recording of its
// version, so it is applied exactly once, and must only use tx. Register it
// in dataMigrations with a version from the same sequence as the SQL files
// (the two may not share a number); it runs in version order after the
// migrations before it.
type DataMigration func(ctx context.Context, tx *sql.Tx) error

// dataMigrations are the migrations written in Go.
var dataMigrations = []Migration{
	{Version: 30, Name: "0030_cron_day_of_week_names", Data: migrateCronDayOfWeek},
	{Version: 70, Name: "0070_job_names_unique", Data: migrateJobNamesUnique},
	{Version: 84, Name: "0084_principal_names_check", Data: migratePrincipalNamesCheck},
	{Version: 86, Name: "0086_principal_name_keys", Data: migratePrincipalNameKeys},
}

// Migrations lists the embedded SQL migrations and the data migrations in
// version order.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, fmt.Errorf("read embedded migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		if !ok {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", name)
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("migration %s: bad version: %w", name, err)
		}
		body, err := migrationFS.ReadFile("migrations/" + name)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", name, err)
		}
		out = append(out, Migration{Version: v, Name: strings.TrimSuffix(name, ".sql"), SQL: string(body)})
	}
	seen := map[int]string{}
	for _, m := range out {
		seen[m.Version] = m.Name
	}
	for _, m := range dataMigrations {
		if other, dup := seen[m.Version]; dup {
			return nil, fmt.Errorf("data migration %s: version %d is taken by %s", m.Name, m.Version, other)
		}
		seen[m.Version] = m.Name
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// Migrate applies the migrations that are not applied yet. Concurrent
// replicas are serialised by a named lock (MySQL, PostgreSQL) or the write
// lock (SQLite).
func (s *Store) Migrate(ctx context.Context) (applied []string, err error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: get connection: %w", err)
	}
	defer conn.Close()
	if s.d.namedLocks() {
		// Named locks are server-wide: the name carries the schema, so
		// installations (and test databases) sharing a server do not wait
		// for each other. MD5 keeps it under MySQL's 64-character limit
		// (and is the name releases before this one computed in SQL).
		sum := md5.Sum([]byte(s.database))
		name := "ringjob_migrate:" + hex.EncodeToString(sum[:])
		if err := s.d.locks().get(ctx, conn, name, 60*time.Second); err != nil {
			return nil, fmt.Errorf("migrate: take migration lock: %w", err)
		}
		defer s.d.locks().release(context.WithoutCancel(ctx), conn, name)
	}
	if _, err := conn.ExecContext(ctx, s.d.ddl(`CREATE TABLE IF NOT EXISTS schema_migrations (
  version INT NOT NULL PRIMARY KEY,
  name VARCHAR(255) NOT NULL,
  applied_ms BIGINT NOT NULL
) {{TABLE}}`)); err != nil {
		return nil, fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	done := map[int]bool{}
	rows, err := conn.QueryContext(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("migrate: read schema_migrations: %w", err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return nil, fmt.Errorf("migrate: scan version: %w", err)
		}
		done[v] = true
	}
	rows.Close()
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	known := map[int]bool{}
	for _, m := range ms {
		known[m.Version] = true
	}
	var st SchemaStatus
	for v := range done {
		if !known[v] {
			st.Unknown = append(st.Unknown, v)
		}
	}
	sort.Ints(st.Unknown)
	if err := st.CheckNotNewer(); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	for _, m := range ms {
		if done[m.Version] {
			continue
		}
		if m.Data != nil {
			if err := s.runDataMigration(ctx, conn, m); err != nil {
				return applied, err
			}
			applied = append(applied, m.Name)
			continue
		}
		if err := s.runSQLMigration(ctx, conn, m); err != nil {
			return applied, err
		}
		applied = append(applied, m.Name)
	}
	if len(applied) > 0 && s.d.name() == "postgres" {
		// A migration may rebuild or fill a table (a copy, new indexes of
		// an expression) and PostgreSQL plans it without statistics until
		// autovacuum's next round; sampling a table is bounded (300 rows
		// per statistics target), so this is quick even on a big database.
		// A new installation's empty tables get theirs from the first
		// pre-read instead (pgstats.go).
		if _, err := conn.ExecContext(ctx, "ANALYZE"); err != nil {
			return applied, fmt.Errorf("migrate: analyze the tables: %w", err)
		}
	}
	return applied, nil
}

// runSQLMigration runs the statements of an SQL migration and records it.
func (s *Store) runSQLMigration(ctx context.Context, conn *sql.Conn, m Migration) error {
	for _, stmt := range splitStatements(s.d.ddl(m.SQL)) {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("migration %s: %w\nstatement: %s%s", m.Name, err, stmt, s.d.ddlHint())
		}
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_ms) VALUES (?, ?, ?)",
		m.Version, m.Name, time.Now().UnixMilli()); err != nil {
		return fmt.Errorf("migration %s: record: %w", m.Name, err)
	}
	return nil
}

// runDataMigration runs a Go migration and records it in one transaction.
func (s *Store) runDataMigration(ctx context.Context, conn *sql.Conn, m Migration) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migration %s: begin: %w", m.Name, err)
	}
	defer tx.Rollback()
	if err := m.Data(ctx, tx); err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_ms) VALUES (?, ?, ?)",
		m.Version, m.Name, time.Now().UnixMilli()); err != nil {
		return fmt.Errorf("migration %s: record: %w", m.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migration %s: commit: %w", m.Name, err)
	}
	return nil
}

// SchemaStatus compares the database's applied migrations with the ones
// this build knows.
type SchemaStatus struct {
	// Pending are the migrations this build has that the database lacks
	// (all of them on an empty database).
	Pending []string
	// Unknown are applied versions this build does not have: the schema
	// was migrated by a newer release.
	Unknown []int
}

// Schema reads which migrations the database has, without changing it.
func (s *Store) Schema(ctx context.Context) (SchemaStatus, error) {
	ms, err := Migrations()
	if err != nil {
		return SchemaStatus{}, err
	}
	applied := map[int]bool{}
	rows, err := s.db.QueryContext(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		// No schema_migrations table: nothing applied yet. Any other error
		// is reported (a missing table is told apart by asking for it).
		var n int
		if cerr := s.db.QueryRowContext(ctx, s.d.tableExists(), "schema_migrations").Scan(&n); cerr != nil || n != 0 {
			return SchemaStatus{}, fmt.Errorf("read schema_migrations: %w", err)
		}
	} else {
		for rows.Next() {
			var v int
			if err := rows.Scan(&v); err != nil {
				rows.Close()
				return SchemaStatus{}, fmt.Errorf("read schema_migrations: %w", err)
			}
			applied[v] = true
		}
		if err := rows.Close(); err != nil {
			return SchemaStatus{}, fmt.Errorf("read schema_migrations: %w", err)
		}
	}
	var st SchemaStatus
	known := map[int]bool{}
	for _, m := range ms {
		known[m.Version] = true
		if !applied[m.Version] {
			st.Pending = append(st.Pending, m.Name)
		}
	}
	for v := range applied {
		if !known[v] {
			st.Unknown = append(st.Unknown, v)
		}
	}
	sort.Ints(st.Unknown)
	return st, nil
}

// ErrSchemaNewer: the database was migrated by a newer release than this
// build; running on it could misread or damage what that release wrote.
var ErrSchemaNewer = errors.New("the database schema is newer than this build of Ringjob")

// CheckNotNewer returns ErrSchemaNewer (wrapped with the versions) when the
// database has migrations this build does not know.
func (st SchemaStatus) CheckNotNewer() error {
	if len(st.Unknown) == 0 {
		return nil
	}
	return fmt.Errorf("%w: it has migration(s) %v that this build does not have; run the release that applied them (or a newer one), or restore a backup taken before them", ErrSchemaNewer, st.Unknown)
}

// MigrationsPending reports how many embedded migrations are not applied
// (used by readiness checks).
func (s *Store) MigrationsPending(ctx context.Context) (int, error) {
	ms, err := Migrations()
	if err != nil {
		return 0, err
	}
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&n); err != nil {
		return len(ms), fmt.Errorf("read schema_migrations: %w", err)
	}
	return len(ms) - n, nil
}

// splitStatements splits a migration on semicolons at line ends, dropping
// comment-only lines.
func splitStatements(sql string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(sql, "\n") {
		trim := strings.TrimSpace(line)
		if strings.HasPrefix(trim, "--") || trim == "" {
			continue
		}
		cur.WriteString(line)
		cur.WriteString("\n")
		if strings.HasSuffix(trim, ";") {
			stmt := strings.TrimSuffix(strings.TrimSpace(cur.String()), ";")
			out = append(out, stmt)
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}
