package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// Asking a command for help succeeds and lists only the flags it uses; a
// wrong flag is a usage error (2) explained on stderr.
func TestCommandHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		var out, errb bytes.Buffer
		require.Equal(t, 0, run([]string{"server", arg}, &out, &errb), errb.String())
		require.Contains(t, out.String(), "-listen")
		require.Contains(t, out.String(), "-database-url")

		out.Reset()
		errb.Reset()
		require.Equal(t, 0, run([]string{"migrate", arg}, &out, &errb), errb.String())
		require.Contains(t, out.String(), "-database-url")
		require.NotContains(t, out.String(), "-listen", "migrate serves nothing")
	}
	var out, errb bytes.Buffer
	require.Equal(t, 2, run([]string{"server", "--no-such-flag"}, &out, &errb))
	require.Contains(t, errb.String(), "no-such-flag")
	require.Empty(t, out.String())
}
