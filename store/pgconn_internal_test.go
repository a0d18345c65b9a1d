package store

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The statements of store/ are written with ? placeholders, INSERT IGNORE
// and LastInsertId; PostgreSQL connections translate them.
func TestPostgresTranslate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, want  string
		returning bool
	}{
		{"SELECT id FROM jobs WHERE id = ? AND name = ?", "SELECT id FROM jobs WHERE id = $1 AND name = $2", false},
		// Literals, quoted names and comments keep their question marks.
		{"SELECT '?', 'it''s ?', \"a?\" FROM t WHERE x = ? -- why?\nAND y = ? /* ? */", "SELECT '?', 'it''s ?', \"a?\" FROM t WHERE x = $1 -- why?\nAND y = $2 /* ? */", false},
		{"INSERT IGNORE INTO settings (name, value) VALUES (?, ?)", "INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT DO NOTHING", false},
		// Tables with a database-assigned id return it.
		{"INSERT INTO runs (job_id) VALUES (?), (?)", "INSERT INTO runs (job_id) VALUES ($1), ($2) RETURNING id", true},
		{"insert ignore into failure_deliveries (run_id) values (?)", "INSERT into failure_deliveries (run_id) values ($1) ON CONFLICT DO NOTHING RETURNING id", true},
		{"INSERT INTO run_keys (job_id) VALUES (?)", "INSERT INTO run_keys (job_id) VALUES ($1)", false},
		// A copy is not asked for its ids.
		{"INSERT INTO runs SELECT * FROM runs_unpartitioned", "INSERT INTO runs SELECT * FROM runs_unpartitioned", false},
		{"INSERT INTO jobs (name) VALUES (?) RETURNING id", "INSERT INTO jobs (name) VALUES ($1) RETURNING id", false},
	} {
		got, returning := pgTranslate(c.in)
		require.Equal(t, c.want, got, c.in)
		require.Equal(t, c.returning, returning, c.in)
	}
}

// Every table whose id is {{AUTO_ID}} is known to the translation, so its
// INSERTs report LastInsertId on PostgreSQL too.
func TestPostgresAutoIDTables(t *testing.T) {
	t.Parallel()
	tables := autoIDTables()
	for _, want := range []string{"jobs", "runs", "job_groups", "principals", "api_tokens", "sessions", "role_bindings", "audit_events", "failure_deliveries", "executor_registry"} {
		require.True(t, tables[want], want)
	}
	require.False(t, tables["run_keys"])
}
