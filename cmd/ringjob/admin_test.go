package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/auth/identity"
	"github.com/ringjob/ringjob/store"
)

// TestAdminCreateUser: the recovery command creates an admin that can log
// in, and run again resets its password (the old one stops working).
func TestAdminCreateUser(t *testing.T) {
	t.Parallel()
	dbURL := "sqlite://" + filepath.Join(t.TempDir(), "r.db")
	create := func() string {
		var out, errb bytes.Buffer
		code := run([]string{"admin", "create-user", "rescue", "--role", "admin", "--database-url", dbURL, "--log-level", "warn"}, &out, &errb)
		require.Equal(t, 0, code, "stderr: %s", errb.String())
		m := regexp.MustCompile(`(?m)^    (\S{24})$`).FindStringSubmatch(out.String())
		require.NotNil(t, m, "no password in %q", out.String())
		return m[1]
	}
	first := create()
	second := create()
	require.NotEqual(t, first, second)

	ctx := context.Background()
	st, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	defer st.Close()
	ident := identity.New(identity.Options{Store: st})
	_, err = ident.Login(ctx, identity.LoginParams{Username: "rescue", Password: first, ClientAddr: "127.0.0.1"})
	require.ErrorIs(t, err, identity.ErrLoginFailed, "the reset password replaced the first")
	res, err := ident.Login(ctx, identity.LoginParams{Username: "rescue", Password: second, ClientAddr: "127.0.0.1"})
	require.NoError(t, err)
	require.True(t, res.Principal.IsAdmin())
	require.True(t, res.Principal.Can(access.PermUsersManage, 0))

	for _, args := range [][]string{
		{"admin", "create-user", "x", "--role", "viewer", "--database-url", dbURL},
		{"admin", "create-user", "--role", "admin", "--database-url", dbURL},
		{"admin", "delete-user", "x"},
	} {
		var out, errb bytes.Buffer
		require.Equal(t, 2, run(args, &out, &errb), "%v", args)
		require.NotEmpty(t, errb.String())
	}
	var out, errb bytes.Buffer
	require.Equal(t, 1, run([]string{"admin", "create-user", "bad name!", "--role", "admin", "--database-url", dbURL}, &out, &errb))
	require.Contains(t, errb.String(), "name")
}
