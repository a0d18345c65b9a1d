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

// The brute-force oracle below reads a compiled expression independently of
// cronSpec.nextWall and dayRule.mask: it asks of each wall time whether it
// matches, field by field, and walks time minute by minute.

// wallMatches reports whether the naive wall time w matches c.
func wallMatches(c *cronSpec, w time.Time) bool {
	return c.sec&(1<<uint(w.Second())) != 0 && minuteMatches(c, w)
}

// dateMatches reports whether any time of w's date could match.
func dateMatches(c *cronSpec, w time.Time) bool {
	if c.month&(1<<uint(w.Month())) == 0 || c.years != nil && !c.years.has(w.Year()-minYear) {
		return false
	}
	return dayMatches(&c.days, w.Year(), w.Month(), w.Day())
}

// minuteMatches is wallMatches without the second.
func minuteMatches(c *cronSpec, w time.Time) bool {
	if c.min&(1<<uint(w.Minute())) == 0 || c.hour&(1<<uint(w.Hour())) == 0 || c.month&(1<<uint(w.Month())) == 0 {
		return false
	}
	if c.years != nil && !c.years.has(w.Year()-minYear) {
		return false
	}
	return dayMatches(&c.days, w.Year(), w.Month(), w.Day())
}

// dayMatches reads the day rule for one date by counting, not by masks.
func dayMatches(r *dayRule, y int, mo time.Month, d int) bool {
	date := time.Date(y, mo, d, 0, 0, 0, 0, time.UTC)
	ldom := time.Date(y, mo+1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, -1).Day()
	isWeekday := func(day int) bool {
		wd := time.Date(y, mo, day, 0, 0, 0, 0, time.UTC).Weekday()
		return wd != time.Saturday && wd != time.Sunday
	}
	// nearestTo is the weekday of this month closest to day (the earlier on a tie).
	nearestTo := func(day int) int {
		for dist := 0; dist < 7; dist++ {
			for _, c := range []int{day - dist, day + dist} {
				if c >= 1 && c <= ldom && isWeekday(c) {
					return c
				}
			}
		}
		return -1
	}
	switch r.kind {
	case daysAny:
		return true
	case daysOfMonth:
		if r.dom&(1<<uint(d)) != 0 {
			return true
		}
		for n := 0; n <= 30; n++ {
			if r.last&(1<<uint(n)) != 0 && d == ldom-n {
				return true
			}
			if r.nearestLast&(1<<uint(n)) != 0 && ldom-n >= 1 && nearestTo(ldom-n) == d {
				return true
			}
		}
		for k := 1; k <= 31; k++ {
			if r.nearest&(1<<uint(k)) != 0 && k <= ldom && nearestTo(k) == d {
				return true
			}
		}
		return false
	default:
		qwd := int(date.Weekday()) + 1 // 1=SUN
		if r.dow&(1<<uint(qwd)) != 0 {
			return true
		}
		if r.lastOfKind == qwd && d+7 > ldom {
			return true
		}
		return r.nth != 0 && r.nthKind == qwd && (d-1)/7+1 == r.nth
	}
}

// bruteWallNext returns the first naive wall time strictly after x and not
// after limit that matches c, trying every minute and, in a matching
// minute, every second.
func bruteWallNext(c *cronSpec, x, limit time.Time) (time.Time, bool) {
	for m := x.Truncate(time.Minute); !m.After(limit); m = m.Add(time.Minute) {
		if !dateMatches(c, m) {
			m = m.Truncate(24 * time.Hour).Add(24*time.Hour - time.Minute) // no minute of this day matches
			continue
		}
		if !minuteMatches(c, m) {
			continue
		}
		for s := range 60 {
			if w := m.Add(time.Duration(s) * time.Second); w.After(x) && !w.After(limit) && wallMatches(c, w) {
				return w, true
			}
		}
	}
	return time.Time{}, false
}

// bruteNext is the first fire strictly after `after` and not after until,
// found by walking instants minute by minute with the DST rules of doc.go
// applied literally: an instant fires when its wall time matches and that
// wall time is shown for the first time; the instant a gap ends fires when
// any wall time skipped by the gap matches. Zone offsets here change on
// whole minutes, so one offset holds for each minute.
func bruteNext(t testing.TB, s Schedule, after, until time.Time) (time.Time, bool) {
	t.Helper()
	cs := s.(*cronSchedule)
	c, loc := cs.spec, cs.loc
	wall := func(i time.Time) time.Time { return wallOf(i, loc) }
	for m := after.Truncate(time.Minute); !m.After(until); m = m.Add(time.Minute) {
		_, offNow := m.In(loc).Zone()
		_, offBefore := m.Add(-time.Second).In(loc).Zone()
		if offNow > offBefore && m.After(after) {
			for w := wall(m.Add(-time.Second)).Add(time.Second); w.Before(wall(m)); w = w.Add(time.Second) {
				if wallMatches(c, w) {
					return m.In(loc), true
				}
			}
		}
		if w := wall(m); !dateMatches(c, w) {
			// Nothing fires until the next wall midnight or the next zone
			// change (where a gap may end), whichever comes first; the wall
			// clock runs evenly until then.
			skip := w.Truncate(24 * time.Hour).Add(24 * time.Hour).Sub(w)
			if _, end := m.In(loc).ZoneBounds(); !end.IsZero() && end.Sub(m) < skip {
				skip = end.Sub(m)
			}
			if skip > time.Minute {
				m = m.Add(skip - time.Minute)
			}
			continue
		}
		if !minuteMatches(c, wall(m)) {
			continue
		}
		for sec := range 60 {
			i := m.Add(time.Duration(sec) * time.Second)
			if !i.After(after) || i.After(until) || !wallMatches(c, wall(i)) {
				continue
			}
			// A repeated wall time fires at its first showing only.
			start, _ := i.In(loc).ZoneBounds()
			_, off := i.In(loc).Zone()
			_, prevOff := start.Add(-time.Nanosecond).In(loc).Zone()
			if !start.IsZero() && prevOff > off && i.Before(start.Add(time.Duration(prevOff-off)*time.Second)) {
				continue
			}
			return i.In(loc), true
		}
	}
	return time.Time{}, false
}
