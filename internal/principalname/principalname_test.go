package principalname_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/principalname"
)

func TestOneRule(t *testing.T) {
	for _, same := range [][2]string{{"Admin", "admin"}, {"ǅ", "Ǆ"}, {"ａｄｍｉｎ", "admin"}, {"Straße", "STRASSE"}} {
		require.Equal(t, principalname.Key(same[0]), principalname.Key(same[1]), "%q and %q", same[0], same[1])
	}
	for _, other := range [][2]string{{"admin", "admin2"}, {"josé", "jose"}, {"a.b", "a_b"}} {
		require.NotEqual(t, principalname.Key(other[0]), principalname.Key(other[1]), "%q and %q", other[0], other[1])
	}
	// NFKC may expand a name beyond the column: its key is then a hash, as
	// distinct as the names.
	long := strings.Repeat("ﷺ", 64) // one character, 18 after NFKC
	require.True(t, strings.HasPrefix(principalname.Key(long), "sha256:"))
	require.LessOrEqual(t, utf8.RuneCountInString(principalname.Key(long)), principalname.MaxKeyChars)
	require.NotEqual(t, principalname.Key(long), principalname.Key(strings.Repeat("ﷺ", 63)))
}
