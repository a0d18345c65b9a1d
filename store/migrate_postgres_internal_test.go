package store

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
)

// A migration written in MySQL's form only fails on PostgreSQL with its
// name, the statement and what to add; its dialect-marked form runs.
func TestPostgresMigrationInMySQLFormSaysWhatToAdd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := OpenPostgres(ctx, dbtest.Postgres(t))
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	conn, err := st.pool.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()

	err = st.runSQLMigration(ctx, conn, Migration{Version: 9999, Name: "9999_widen", SQL: "ALTER TABLE jobs MODIFY name VARCHAR(300) NOT NULL;\n"})
	require.ErrorContains(t, err, "migration 9999_widen")
	require.ErrorContains(t, err, "statement: ALTER TABLE jobs MODIFY name")
	require.ErrorContains(t, err, "{{POSTGRES_ONLY}}")

	err = st.runSQLMigration(ctx, conn, Migration{Version: 9999, Name: "9999_widen", SQL: "{{MYSQL_ONLY}} ALTER TABLE jobs MODIFY name VARCHAR(300) NOT NULL;\n" +
		"{{POSTGRES_ONLY}} ALTER TABLE jobs ALTER COLUMN name TYPE VARCHAR(300);\n"})
	require.NoError(t, err)
	var n int
	require.NoError(t, st.db.QueryRowContext(ctx, "SELECT character_maximum_length FROM information_schema.columns WHERE table_name = 'jobs' AND column_name = 'name'").Scan(&n))
	require.Equal(t, 300, n)
}
