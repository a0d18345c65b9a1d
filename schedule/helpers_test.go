package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// instant parses an RFC 3339 time for test tables.
func instant(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return v
}

// instants parses a list of RFC 3339 times.
func instants(t testing.TB, ss ...string) []time.Time {
	t.Helper()
	out := make([]time.Time, 0, len(ss))
	for _, s := range ss {
		out = append(out, instant(t, s))
	}
	return out
}

// mustParse parses a schedule the test expects to be valid.
func mustParse(t testing.TB, kind Kind, conf, tz string) Schedule {
	t.Helper()
	s, err := Parse(kind, conf, tz)
	require.NoError(t, err)
	require.NotNil(t, s)
	return s
}

// mustZone loads a zone the test needs.
func mustZone(t testing.TB, tz string) *time.Location {
	t.Helper()
	loc, err := LoadZone(tz)
	require.NoError(t, err)
	return loc
}

// requireTimes compares instants, ignoring location, with a readable diff.
func requireTimes(t testing.TB, want, got []time.Time) {
	t.Helper()
	fmtAll := func(ts []time.Time) []string {
		out := make([]string, len(ts))
		for i, v := range ts {
			out[i] = v.UTC().Format(time.RFC3339Nano)
		}
		return out
	}
	require.Equal(t, fmtAll(want), fmtAll(got))
}

// fireUntil chains Next from `from` and returns every fire up to and including `until`.
func fireUntil(t testing.TB, s Schedule, from, until time.Time) []time.Time {
	t.Helper()
	var out []time.Time
	prev := from
	for i := 0; ; i++ {
		require.Less(t, i, 1_000_000, "runaway schedule")
		next, ok := s.Next(prev)
		if !ok || next.After(until) {
			return out
		}
		require.True(t, next.After(prev), "Next(%s) = %s is not strictly after", prev, next)
		require.Zero(t, next.Nanosecond(), "fire %s is not a whole second", next)
		out = append(out, next)
		prev = next
	}
}
