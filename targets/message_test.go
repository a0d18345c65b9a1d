package targets_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/targets"
)

func TestCleanMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want string
		max            int
	}{
		{"plain text is kept", "boom: bad input", "boom: bad input", 100},
		{"newlines and tabs are kept", "line 1\n\tline 2", "line 1\n\tline 2", 100},
		{"ANSI escapes and CR are dropped", "ok\x1b[2J\x1b[31mred\r\x00", "ok[2J[31mred", 100},
		{"invalid UTF-8 is dropped", "a\xffb", "ab", 100},
		{"long text is cut on a rune boundary", "ééééé", "éé...", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, targets.CleanMessage(tc.in, tc.max))
		})
	}
}
