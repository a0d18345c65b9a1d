package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// naive reads "2006-01-02 15:04:05" as a naive wall time.
func naive(t testing.TB, s string) time.Time {
	t.Helper()
	w, err := time.Parse(time.DateTime, s)
	require.NoError(t, err)
	return w
}

// wallOf is the test's own reading of an instant's wall clock.
func wallOf(i time.Time, loc *time.Location) time.Time {
	l := i.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}

func TestResolveWall(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		tz   string
		wall string
		want string
	}{
		{name: "UTC", tz: "UTC", wall: "2026-03-29 02:30:00", want: "2026-03-29T02:30:00Z"},
		{name: "no DST zone", tz: "Asia/Kolkata", wall: "2026-03-29 02:30:00", want: "2026-03-28T21:00:00Z"},
		{name: "Berlin before the gap", tz: "Europe/Berlin", wall: "2026-03-29 01:59:59", want: "2026-03-29T00:59:59Z"},
		{name: "Berlin gap start", tz: "Europe/Berlin", wall: "2026-03-29 02:00:00", want: "2026-03-29T01:00:00Z"},
		{name: "Berlin in the gap", tz: "Europe/Berlin", wall: "2026-03-29 02:30:00", want: "2026-03-29T01:00:00Z"},
		{name: "Berlin gap last second", tz: "Europe/Berlin", wall: "2026-03-29 02:59:59", want: "2026-03-29T01:00:00Z"},
		{name: "Berlin gap end", tz: "Europe/Berlin", wall: "2026-03-29 03:00:00", want: "2026-03-29T01:00:00Z"},
		{name: "Berlin after the gap", tz: "Europe/Berlin", wall: "2026-03-29 03:00:01", want: "2026-03-29T01:00:01Z"},
		{name: "Berlin before the repeat", tz: "Europe/Berlin", wall: "2026-10-25 01:59:59", want: "2026-10-24T23:59:59Z"},
		{name: "Berlin repeat start is the first", tz: "Europe/Berlin", wall: "2026-10-25 02:00:00", want: "2026-10-25T00:00:00Z"},
		{name: "Berlin repeat is the first", tz: "Europe/Berlin", wall: "2026-10-25 02:59:59", want: "2026-10-25T00:59:59Z"},
		{name: "Berlin after the repeat", tz: "Europe/Berlin", wall: "2026-10-25 03:00:00", want: "2026-10-25T02:00:00Z"},
		{name: "New York gap", tz: "America/New_York", wall: "2026-03-08 02:30:00", want: "2026-03-08T07:00:00Z"},
		{name: "New York repeat", tz: "America/New_York", wall: "2026-11-01 01:30:00", want: "2026-11-01T05:30:00Z"},
		{name: "New York after the repeat", tz: "America/New_York", wall: "2026-11-01 02:00:00", want: "2026-11-01T07:00:00Z"},
		{name: "Lord Howe half-hour gap", tz: "Australia/Lord_Howe", wall: "2026-10-04 02:15:00", want: "2026-10-03T15:30:00Z"},
		{name: "Lord Howe half-hour repeat", tz: "Australia/Lord_Howe", wall: "2026-04-05 01:45:00", want: "2026-04-04T14:45:00Z"},
		{name: "Apia skipped day", tz: "Pacific/Apia", wall: "2011-12-30 12:00:00", want: "2011-12-30T10:00:00Z"},
		{name: "Apia before the skipped day", tz: "Pacific/Apia", wall: "2011-12-29 23:59:59", want: "2011-12-30T09:59:59Z"},
		{name: "Apia after the skipped day", tz: "Pacific/Apia", wall: "2011-12-31 00:00:00", want: "2011-12-30T10:00:00Z"},
		{name: "Sao Paulo missing midnight", tz: "America/Sao_Paulo", wall: "2018-11-04 00:00:00", want: "2018-11-04T03:00:00Z"},
		{name: "Sao Paulo repeated hour before midnight", tz: "America/Sao_Paulo", wall: "2018-02-17 23:30:00", want: "2018-02-18T01:30:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			loc := mustZone(t, tt.tz)
			r := resolveWall(naive(t, tt.wall), loc)
			requireTimes(t, instants(t, tt.want), []time.Time{r.at})
			require.Equal(t, loc, r.at.Location())
		})
	}
}

// Around transitions, resolveWall never decreases, lands on the wall time
// when it exists, and agrees with wallClock.
func TestResolveWall_Sweep(t *testing.T) {
	t.Parallel()

	tests := []struct {
		tz   string
		from string
	}{
		{tz: "Europe/Berlin", from: "2026-03-28 12:00:00"},
		{tz: "Europe/Berlin", from: "2026-10-24 12:00:00"},
		{tz: "America/New_York", from: "2026-03-07 12:00:00"},
		{tz: "America/New_York", from: "2026-10-31 12:00:00"},
		{tz: "Australia/Lord_Howe", from: "2026-04-04 12:00:00"},
		{tz: "Australia/Lord_Howe", from: "2026-10-03 12:00:00"},
		{tz: "Pacific/Apia", from: "2011-12-29 00:00:00"},
		{tz: "America/Sao_Paulo", from: "2018-02-17 00:00:00"},
		{tz: "America/Sao_Paulo", from: "2018-11-03 00:00:00"},
	}
	for _, tt := range tests {
		t.Run(tt.tz+" "+tt.from, func(t *testing.T) {
			t.Parallel()

			loc := mustZone(t, tt.tz)
			w := naive(t, tt.from)
			var prev time.Time
			for range 3 * 24 * 60 {
				r := resolveWall(w, loc)
				if !prev.IsZero() {
					require.False(t, r.at.Before(prev), "resolveWall(%s) = %s went backwards", w, r.at)
				}
				if got := wallOf(r.at, loc); got.Equal(w) {
					// An existing wall time: the first instant showing it.
					require.NotEqual(t, w, wallOf(r.at.Add(-time.Hour), loc))
					require.NotEqual(t, w, wallOf(r.at.Add(-30*time.Minute), loc))
				} else {
					// A skipped wall time: the gap end, the first instant showing a later wall time.
					require.True(t, got.After(w), "resolveWall(%s) = %s shows %s", w, r.at, got)
					require.True(t, wallOf(r.at.Add(-time.Second), loc).Before(w))
				}
				require.Equal(t, wallOf(r.at, loc), wallClock(r.at, loc))
				_, off := r.at.Zone()
				require.Equal(t, time.Duration(off)*time.Second, r.offset)
				prev = r.at
				w = w.Add(time.Minute)
			}
		})
	}
}

func TestResolveWall_FixedZone(t *testing.T) {
	t.Parallel()

	loc := time.FixedZone("X", -(3*3600 + 30*60))
	r := resolveWall(naive(t, "2026-01-01 00:00:00"), loc)
	requireTimes(t, instants(t, "2026-01-01T03:30:00Z"), []time.Time{r.at})
	require.True(t, r.end.IsZero())
}
