package store_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/store"
)

// TestEnsureAppUser: migrate's application user can read and write rows of
// its schema through the store, cannot change tables, and running it again
// sets a new password; a bad name is refused and creates nothing.
func TestEnsureAppUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := dbtest.MySQL(t)
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	owner, err := store.OpenMySQL(ctx, dsn)
	require.NoError(t, err)
	defer owner.Close()
	_, err = owner.Migrate(ctx)
	require.NoError(t, err)
	user := "rj_app_" + cfg.DBName[max(0, len(cfg.DBName)-12):]
	t.Cleanup(func() {
		_, _ = owner.DB().ExecContext(context.Background(), fmt.Sprintf("DROP USER IF EXISTS '%s'@'%%'", user))
	})

	require.ErrorContains(t, owner.EnsureAppUser(ctx, "x'; DROP USER root; --", "pw"), "must be 1-32 letters")
	require.ErrorContains(t, owner.EnsureAppUser(ctx, user, ""), "password is empty")
	require.NoError(t, owner.EnsureAppUser(ctx, user, "first 'quoted' password"))

	asApp := func(pw string) (*store.Store, error) {
		u := url.URL{Scheme: "mysql", User: url.UserPassword(user, pw), Host: cfg.Addr, Path: "/" + cfg.DBName}
		return store.Open(ctx, u.String())
	}
	app, err := asApp("first 'quoted' password")
	require.NoError(t, err)
	_, err = app.GroupCreate(ctx, store.GroupCreateParams{AppName: "app-user", Members: []string{"local://x"}, NowMs: 1})
	require.NoError(t, err, "the app user writes rows")
	gs, err := app.GroupList(ctx)
	require.NoError(t, err)
	require.Len(t, gs, 1)
	schema, err := app.Schema(ctx)
	require.NoError(t, err, "the app user reads the schema version")
	require.Empty(t, schema.Pending)
	_, err = app.DB().ExecContext(ctx, "CREATE TABLE not_allowed (id INT)")
	require.ErrorContains(t, err, "denied", "the app user cannot create tables")
	_, err = app.DB().ExecContext(ctx, "DROP TABLE jobs")
	require.ErrorContains(t, err, "denied", "the app user cannot drop tables")
	app.Close()

	require.NoError(t, owner.EnsureAppUser(ctx, user, "second-password"), "again: the password changes")
	_, err = asApp("first 'quoted' password")
	require.Error(t, err, "the old password no longer works")
	app, err = asApp("second-password")
	require.NoError(t, err)
	app.Close()

	var n int
	require.NoError(t, owner.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM mysql.user WHERE user LIKE 'x%DROP%'").Scan(&n))
	require.Zero(t, n)

	lite, err := store.OpenSQLite(ctx, dbtest.SQLitePath(t))
	require.NoError(t, err)
	defer lite.Close()
	require.ErrorIs(t, lite.EnsureAppUser(ctx, user, "pw"), store.ErrNotSupported)
}
