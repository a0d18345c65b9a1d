package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// Asking a command for help succeeds and lists only the flags it uses; a
// wrong flag, an unknown command or a missing one is a usage error (2)
// explained on stderr.
func TestCommandHelp(t *testing.T) {
	help := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		require.Equal(t, 0, run(args, &out, &errb), "%v: %s", args, errb.String())
		return out.String()
	}
	for _, form := range [][]string{{"server", "--help"}, {"server", "-h"}, {"help", "server"}} {
		out := help(form...)
		require.Contains(t, out, "--listen")
		require.Contains(t, out, "--database-url")
	}
	for _, form := range [][]string{{"migrate", "--help"}, {"migrate", "-h"}, {"help", "migrate"}} {
		out := help(form...)
		require.Contains(t, out, "--database-url")
		require.NotContains(t, out, "--listen", "migrate serves nothing")
	}
	root := help("--help")
	for _, c := range []string{"server", "migrate", "admin", "dev", "version", "completion"} {
		require.Contains(t, root, "\n  "+c+" ")
	}
	require.Contains(t, help("admin", "create-user", "--help"), "--role")

	for _, args := range [][]string{{"server", "--no-such-flag"}, {}, {"no-such-command"}, {"admin"}, {"admin", "delete-user", "x"}, {"version", "extra"}} {
		var out, errb bytes.Buffer
		require.Equal(t, 2, run(args, &out, &errb), "%v", args)
		require.Contains(t, errb.String(), "--help' for usage", "%v", args)
		require.Empty(t, out.String(), "%v", args)
	}
}
