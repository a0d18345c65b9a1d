package identity_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/auth/identity"
	"github.com/ringjob/ringjob/internal/servicekit"
	"github.com/ringjob/ringjob/store"
)

// A user or service account name is one name in all its case and width
// forms, on SQLite and MariaDB alike: a second principal cannot take it,
// and a login by any of its forms is a login of its one owner.
func TestPrincipalNamesFoldedOnEveryDatabase(t *testing.T) {
	t.Parallel()
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := setup(t, kind)
			b.id = identity.New(identity.Options{Store: b.st, Clock: b.clock, Access: identity.AccessOptions{PasswordHash: access.HashParams{Time: 1, MemoryKiB: 64, Threads: 1}}})
			const pw = "a long enough password"
			admin, err := b.id.CreateUser(ctx, identity.UserCreateParams{Name: "Admin", Password: pw})
			require.NoError(t, err)

			_, err = b.id.CreateUser(ctx, identity.UserCreateParams{Name: "admin", Password: pw})
			var ce *servicekit.ConflictError
			require.ErrorAs(t, err, &ce, `"admin" after "Admin"`)
			require.Equal(t, "name", ce.Field)
			_, err = b.id.CreateServiceAccount(ctx, "ADMIN")
			require.ErrorAs(t, err, &ce)
			sa, err := b.id.CreateServiceAccount(ctx, "deploy")
			require.NoError(t, err)
			renamed := "aDMIN"
			_, err = b.id.UpdatePrincipal(ctx, identity.PrincipalUpdateParams{Kind: store.PrincipalService, ID: sa.ID, Name: &renamed})
			require.ErrorAs(t, err, &ce, "a rename is held to the same rule")

			// The SSO user "ADMIN" is refused beside the local "Admin" on every
			// database (it was created beside it on SQLite only).
			_, err = b.id.LoginSSO(ctx, identity.SSOIdentity{Subject: "https://idp.example|42", Username: "ADMIN"}, "192.0.2.1")
			require.ErrorAs(t, err, &ce)
			require.Equal(t, "username", ce.Field)

			for _, name := range []string{"Admin", "admin", "ａｄｍｉｎ", "ＡＤＭＩＮ"} {
				res, err := b.id.Login(ctx, identity.LoginParams{Username: name, Password: pw, ClientAddr: "192.0.2.1"})
				require.NoError(t, err, name)
				require.Equal(t, admin.ID, res.Principal.ID, name)
			}

			// The recovery command resets the one user rather than adding another.
			_, created, err := b.id.EnsureAdminUser(ctx, "ADMIN")
			require.NoError(t, err)
			require.False(t, created)
			users, err := b.id.ListPrincipals(ctx, store.PrincipalUser, identity.PrincipalListParams{})
			require.NoError(t, err)
			require.Len(t, users.Items, 1)
		})
	}
}
