package schedule

import "time"

// Wall clocks are handled as "naive" times: a time.Time in UTC whose fields
// are the wall-clock reading in the job's zone. Cron matching happens on
// naive times, where every day has 24 hours; resolveWall maps a naive time
// back to an instant with the DST rules in doc.go.

// maxZoneOffset bounds any UTC offset the tz database has used (about
// ±15 h), with margin, so every instant that can show a given wall time lies
// within ±maxZoneOffset of it.
const maxZoneOffset = 26 * time.Hour

// maxZoneSteps bounds the zone periods walked to resolve one wall time.
const maxZoneSteps = 64

// wallClock returns the wall-clock reading of t in loc as a naive time.
func wallClock(t time.Time, loc *time.Location) time.Time {
	_, off := t.In(loc).Zone()
	return t.Add(time.Duration(off) * time.Second).UTC()
}

// resolution is the instant a naive wall time maps to, plus the zone period
// that instant lies in: every wall time that maps into the same period maps
// linearly (instant = wall - offset).
type resolution struct {
	at     time.Time     // the instant, in loc
	offset time.Duration // UTC offset of the period holding at
	end    time.Time     // end of that period; zero if it never ends
}

// resolveWall maps the naive wall time w in loc to an instant:
//   - a wall time that occurs once maps to that instant;
//   - a wall time that occurs twice (fall back) maps to its first occurrence;
//   - a wall time that does not occur (spring forward gap) maps to the instant
//     the gap ends, the first instant whose wall time is later than w.
//
// The mapping never decreases as w grows.
func resolveWall(w time.Time, loc *time.Location) resolution {
	t := w.Add(-maxZoneOffset).In(loc) // earliest instant that could show w
	limit := w.Add(maxZoneOffset)      // latest one
	var prevOffset time.Duration
	havePrev := false
	for range maxZoneSteps {
		_, offSec := t.Zone()
		off := time.Duration(offSec) * time.Second
		start, end := t.ZoneBounds()
		// w falls in the gap opened where the previous period ended.
		if havePrev && off > prevOffset && !w.Before(start.Add(prevOffset)) && w.Before(start.Add(off)) {
			return resolution{at: start.In(loc), offset: off, end: end}
		}
		if at := w.Add(-off); (start.IsZero() || !at.Before(start)) && (end.IsZero() || at.Before(end)) {
			return resolution{at: at.In(loc), offset: off, end: end}
		}
		if end.IsZero() || end.After(limit) {
			break
		}
		prevOffset, havePrev = off, true
		t = end.In(loc)
	}
	// Not reached for zones from the tz database; fall back to Go's choice.
	at := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), loc)
	_, offSec := at.Zone()
	return resolution{at: at, offset: time.Duration(offSec) * time.Second}
}
