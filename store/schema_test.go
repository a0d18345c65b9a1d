package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/store"
)

// TestSchemaStatus: an empty database has every migration pending; a
// migrated one none; one that a newer release migrated (a version this build
// does not know) is reported, and Migrate refuses to touch it.
func TestSchemaStatus(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var st *store.Store
			var err error
			switch dialect {
			case "mysql":
				st, err = store.OpenMySQL(ctx, dbtest.MySQL(t))
			case "postgres":
				st, err = store.OpenPostgres(ctx, dbtest.Postgres(t))
			default:
				st, err = store.OpenSQLite(ctx, dbtest.SQLitePath(t))
			}
			require.NoError(t, err)
			t.Cleanup(func() { st.Close() })
			ms, err := store.Migrations()
			require.NoError(t, err)

			empty, err := st.Schema(ctx)
			require.NoError(t, err)
			require.Len(t, empty.Pending, len(ms), "an empty database lacks every migration")
			require.Empty(t, empty.Unknown)
			require.NoError(t, empty.CheckNotNewer())

			_, err = st.Migrate(ctx)
			require.NoError(t, err)
			done, err := st.Schema(ctx)
			require.NoError(t, err)
			require.Empty(t, done.Pending)
			require.Empty(t, done.Unknown)

			_, err = st.DB().ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_ms) VALUES (9999, '9999_from_the_future', 1)")
			require.NoError(t, err)
			newer, err := st.Schema(ctx)
			require.NoError(t, err)
			require.Equal(t, []int{9999}, newer.Unknown)
			require.ErrorIs(t, newer.CheckNotNewer(), store.ErrSchemaNewer)
			require.ErrorContains(t, newer.CheckNotNewer(), "[9999]")
			_, err = st.Migrate(ctx)
			require.ErrorIs(t, err, store.ErrSchemaNewer, "migrate refuses a schema a newer release wrote")
		})
	}
}
