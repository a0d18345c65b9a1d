package store

import (
	"context"
	"database/sql"
	"embed"
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
// replicas are serialised by a named lock (MySQL) or the write lock (SQLite).
func (s *Store) Migrate(ctx context.Context) (applied []string, err error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: get connection: %w", err)
	}
	defer conn.Close()
	if s.d.namedLocks() {
		// Named locks are server-wide: the name carries the schema, so
		// installations (and test databases) sharing a server do not wait
		// for each other. MD5 keeps it under the 64-character limit.
		var got int
		if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(CONCAT('ringjob_migrate:', MD5(DATABASE())), 60)").Scan(&got); err != nil || got != 1 {
			return nil, fmt.Errorf("migrate: take migration lock (got %d): %v", got, err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK(CONCAT('ringjob_migrate:', MD5(DATABASE())))")
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
		for _, stmt := range splitStatements(s.d.ddl(m.SQL)) {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return applied, fmt.Errorf("migration %s: %w\nstatement: %s", m.Name, err, stmt)
			}
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_ms) VALUES (?, ?, ?)",
			m.Version, m.Name, time.Now().UnixMilli()); err != nil {
			return applied, fmt.Errorf("migration %s: record: %w", m.Name, err)
		}
		applied = append(applied, m.Name)
	}
	return applied, nil
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
