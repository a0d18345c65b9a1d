package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/store"
)

// Principal names compare by one rule on every database (NFKC, then case
// folding): a name that folds like a taken one is refused, whatever the
// database's collation, and a lookup finds the name in any of its forms.
func TestPrincipalNamesCompareByOneRule(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		create := func(name, kind string) (store.Principal, error) {
			return st.PrincipalCreate(ctx, store.PrincipalCreateParams{Name: name, Kind: kind, Source: store.SourceLocal, NowMs: t0})
		}
		admin, err := create("Admin", store.PrincipalUser)
		require.NoError(t, err)
		for _, same := range []string{"admin", "ADMIN", "ａｄｍｉｎ", "Ａｄｍｉｎ"} {
			_, err := create(same, store.PrincipalService)
			require.ErrorIs(t, err, store.ErrConflict, "%q is the name %q", same, "Admin")
			got, err := st.PrincipalByName(ctx, same)
			require.NoError(t, err, same)
			require.Equal(t, admin.ID, got.ID, same)
			require.Equal(t, "Admin", got.Name, "the name is kept as it was given")
		}

		// U+01C5 (title case) and U+01C4 (upper case) are the same letters.
		dz, err := create("ǅ", store.PrincipalUser)
		require.NoError(t, err)
		_, err = create("Ǆ", store.PrincipalUser)
		require.ErrorIs(t, err, store.ErrConflict)
		got, err := st.PrincipalByName(ctx, "ǆ")
		require.NoError(t, err)
		require.Equal(t, dz.ID, got.ID)

		// A rename is held to the same rule; a principal may change the case
		// of its own name.
		bob, err := create("bob", store.PrincipalService)
		require.NoError(t, err)
		require.ErrorIs(t, st.PrincipalRename(ctx, bob.ID, "aDmIn", t0), store.ErrConflict)
		require.NoError(t, st.PrincipalRename(ctx, bob.ID, "BOB", t0))
		got, err = st.PrincipalByName(ctx, "ｂｏｂ")
		require.NoError(t, err)
		require.Equal(t, bob.ID, got.ID)
		_, err = st.PrincipalByName(ctx, "admin2")
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

// An existing database whose names collide under the rule is refused by
// the upgrade with both principals named and nothing changed (none merged
// or dropped, the schema as before, so the release in use keeps working);
// once one of each pair is renamed or deleted, the upgrade applies.
func TestMigratePrincipalNameKeys(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		exec := func(q string, args ...any) {
			t.Helper()
			_, err := st.DB().ExecContext(ctx, q, args...)
			require.NoError(t, err, q)
		}
		// Pretend the database predates 0084: no name_key, the name itself
		// unique by the database's own comparison.
		if st.Kind() != "mysql" {
			exec("DROP INDEX principals_name_key")
		} else {
			exec("DROP INDEX principals_name_key ON principals")
		}
		exec("ALTER TABLE principals DROP COLUMN name_key")
		exec("CREATE UNIQUE INDEX principals_name ON principals (name)")
		exec("DELETE FROM schema_migrations WHERE version IN (84, 85, 86)")
		insert := func(name, kind, source string) int64 {
			t.Helper()
			res, err := st.DB().ExecContext(ctx, "INSERT INTO principals (name, kind, source, email, password_hash, sso_subject, sso_groups, created_ms, updated_ms) VALUES (?, ?, ?, '', '', '', '[]', ?, ?)",
				name, kind, source, t0, t0)
			require.NoError(t, err, name)
			id, err := res.LastInsertId()
			require.NoError(t, err)
			return id
		}
		alice := insert("alice", store.PrincipalUser, store.SourceLocal)
		ssoAlice := insert("Alice", store.PrincipalUser, store.SourceOIDC)
		dz := insert("ǅ", store.PrincipalService, store.SourceLocal)
		dzUpper := insert("Ǆ", store.PrincipalUser, store.SourceLocal)
		carol := insert("carol", store.PrincipalUser, store.SourceLocal)

		_, err := st.Migrate(ctx)
		require.Error(t, err)
		msg := err.Error()
		require.Contains(t, msg, `user "alice" (id `)
		require.Contains(t, msg, `user "Alice" (id `)
		require.Contains(t, msg, `service account "ǅ" (id `)
		require.Contains(t, msg, `user "Ǆ" (id `)
		require.Contains(t, msg, "2 existing name(s) collide")
		require.Contains(t, msg, "rename")
		require.NotContains(t, msg, "carol")
		pending, err := st.MigrationsPending(ctx)
		require.NoError(t, err)
		require.Equal(t, 3, pending, "nothing was applied")
		var n int
		require.NoError(t, st.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM principals").Scan(&n))
		require.Equal(t, 5, n, "none was merged or dropped")
		_, err = st.DB().ExecContext(ctx, "SELECT name_key FROM principals")
		require.Error(t, err, "the schema is as before")

		// The operator renames the local Alice and deletes one of the others.
		exec("UPDATE principals SET name = 'alice-local' WHERE id = ?", alice)
		exec("DELETE FROM principals WHERE id = ?", dzUpper)
		applied, err := st.Migrate(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"0084_principal_names_check", "0085_principal_name_keys", "0086_principal_name_keys"}, applied)
		for name, want := range map[string]int64{"ALICE": ssoAlice, "alice-LOCAL": alice, "ǆ": dz, "ｃａｒｏｌ": carol} {
			got, err := st.PrincipalByName(ctx, name)
			require.NoError(t, err, name)
			require.Equal(t, want, got.ID, name)
		}
		_, err = st.PrincipalCreate(ctx, store.PrincipalCreateParams{Name: "CAROL", Kind: store.PrincipalUser, Source: store.SourceLocal, NowMs: t0})
		require.ErrorIs(t, err, store.ErrConflict, "existing rows got their keys")

		// A replica of the earlier release, still running during a rolling
		// upgrade, writes a principal without a key: it is found by its
		// exact name.
		old := insert("oscar", store.PrincipalUser, store.SourceLocal)
		got, err := st.PrincipalByName(ctx, "oscar")
		require.NoError(t, err)
		require.Equal(t, old, got.ID)
	})
}
