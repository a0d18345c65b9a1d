// Package storetest opens the stores that tests run against: a migrated
// store on a fresh MySQL/MariaDB or PostgreSQL database or a fresh SQLite file (all from
// internal/dbtest), closed when the test ends. Every package whose tests
// need a store uses it, so the one test suite runs against both dialects
// the same way everywhere.
package storetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/store"
)

// Dialects are the databases every store-backed test runs against. The
// PostgreSQL runs are skipped, saying so, without RINGJOB_POSTGRES_DSN
// (see dbtest.Postgres).
var Dialects = []string{"mysql", "postgres", "sqlite"}

// Open returns a migrated store of the dialect ("mysql", "postgres" or
// "sqlite") on a database of the test's own, closed when the test ends.
func Open(t testing.TB, dialect string) *store.Store {
	t.Helper()
	ctx := context.Background()
	var st *store.Store
	var err error
	switch dialect {
	case "mysql":
		st, err = store.OpenMySQL(ctx, dbtest.MySQL(t))
	case "postgres":
		st, err = store.OpenPostgres(ctx, dbtest.Postgres(t))
	case "sqlite":
		st, err = store.OpenSQLite(ctx, dbtest.SQLitePath(t))
	default:
		t.Fatalf("storetest: unknown dialect %q (want one of %v)", dialect, Dialects)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	return st
}

// Each runs fn as a parallel subtest per dialect, named after it, with a
// store of its own.
func Each(t *testing.T, fn func(t *testing.T, st *store.Store)) {
	t.Helper()
	for _, dialect := range Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			fn(t, Open(t, dialect))
		})
	}
}

// Servers are the dialects that are database servers (MySQL/MariaDB and
// PostgreSQL): row locks, named locks, sessions that can be ended.
var Servers = []string{"mysql", "postgres"}

// EachServer is Each over Servers only, for behaviour SQLite does not have.
func EachServer(t *testing.T, fn func(t *testing.T, st *store.Store)) {
	t.Helper()
	for _, dialect := range Servers {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			fn(t, Open(t, dialect))
		})
	}
}
