package dbtest

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPostgresGivesEachTestItsOwnDatabase: a test gets a new, empty database
// with byte-order comparison, and it is dropped when the test ends.
func TestPostgresGivesEachTestItsOwnDatabase(t *testing.T) {
	var name string
	t.Run("inner", func(t *testing.T) {
		dsn := Postgres(t)
		u, err := url.Parse(dsn)
		require.NoError(t, err)
		name = strings.TrimPrefix(u.Path, "/")
		require.True(t, strings.HasPrefix(name, dbNamePrefix+"testpostgresgiveseachtestitsown"), name)
		require.LessOrEqual(t, len(name), maxPostgresDBName)
		db, err := sql.Open("pgx", dsn)
		require.NoError(t, err)
		defer db.Close()
		var tables int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema()").Scan(&tables))
		require.Zero(t, tables)
		var less bool
		require.NoError(t, db.QueryRow("SELECT 'B' < 'a'").Scan(&less))
		require.True(t, less, "strings compare by bytes")
	})
	if name == "" {
		return // skipped: no RINGJOB_POSTGRES_DSN
	}
	var n int
	require.NoError(t, thePG.admin.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM pg_database WHERE datname = $1", name).Scan(&n))
	require.Zero(t, n, "the database is dropped after its test")
}

// Without the variable the PostgreSQL runs skip, and say how to turn them on.
func TestPostgresSkipsWithoutTheVariable(t *testing.T) {
	if os.Getenv(EnvPostgresDSN) != "" {
		t.Skip("the variable is set")
	}
	ran := false
	t.Run("inner", func(t *testing.T) {
		defer func() { ran = t.Skipped() }()
		Postgres(t)
	})
	require.True(t, ran, "skipped")
}

func TestPostgresDatabaseNamesFit(t *testing.T) {
	name := dbNameFit(strings.Repeat("VeryLongTestName/", 10), randomHex(6), maxPostgresDBName)
	require.LessOrEqual(t, len(name), maxPostgresDBName)
}
