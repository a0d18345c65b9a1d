package schedule

import (
	"errors"
	"testing"
	"time"
)

var fuzzZones = []string{
	"", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Apia",
	"America/Sao_Paulo", "Asia/Tehran", "Asia/Kolkata", "Pacific/Chatham", "America/Santiago",
}

// FuzzCronNext checks that Parse never panics, that every error is a
// ParseError, and that chained Next never panics, returns whole seconds
// strictly after its argument, and is strictly increasing.
func FuzzCronNext(f *testing.F) {
	seeds := []struct {
		expr  string
		after int64
		zone  uint8
	}{
		{"* * * * * ?", 1774746000, 1},       // Berlin spring forward
		{"0 * 2 * * ?", 1792886400, 1},       // Berlin fall back
		{"0 30 2 * * ?", 1772953200, 2},      // New York spring forward
		{"0 30 1 * * ?", 1793509200, 2},      // New York fall back
		{"*/5 * * * * ?", 1775314800, 3},     // Lord Howe
		{"0 0 12 * * ?", 1325152800, 4},      // Apia skipped day
		{"0 0 0 * * ?", 1541300000, 5},       // Sao Paulo midnight gap
		{"0 0 9 ? * MON-FRI", 1767225600, 0}, //
		{"0 0 0 29 2 ?", 4058208000, 0},      // 2098, the long 29 February gap
		{"0 0 0 1 JAN,JUL ?", 0, 6},          //
		{"0 0 2 * * ? *", 1767225600, 9},     //
		{"@weekly", 1767225600, 7},           //
		{"0 0 25 * * ?", 0, 0},               // invalid
		{"0 0 0 L * ?", 0, 0},                // invalid
		{"0 0 0 ? * 6#3", 0, 0},              // invalid
		{"3/20 1-10/3 0,12 * JAN-MAR,DEC ?", 0, 8},
	}
	for _, s := range seeds {
		f.Add(s.expr, s.after, s.zone)
	}
	f.Fuzz(func(t *testing.T, expr string, afterSec int64, zone uint8) {
		tz := fuzzZones[int(zone)%len(fuzzZones)]
		s, err := Parse(KindCron, expr, tz)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, ErrInvalid) || pe.Msg == "" {
				t.Fatalf("Parse(%q) error %v is not a ParseError", expr, err)
			}
			return
		}
		// Keep `after` between 1970 and 2200.
		const span = 7258118400 // 1970-01-01 .. 2200-01-01 in seconds
		sec := afterSec % span
		if sec < 0 {
			sec += span
		}
		prev := time.Unix(sec, (afterSec&0xffff)*15259).UTC() // some sub-second part too
		for range 24 {
			next, ok := s.Next(prev)
			if !ok {
				if !next.IsZero() {
					t.Fatalf("Next(%s) = %s with false", prev, next)
				}
				return
			}
			if !next.After(prev) {
				t.Fatalf("%q in %q: Next(%s) = %s is not strictly after", expr, tz, prev, next)
			}
			if next.Nanosecond() != 0 {
				t.Fatalf("%q in %q: Next(%s) = %s is not a whole second", expr, tz, prev, next)
			}
			// Asking again from just before the fire finds the same fire.
			again, ok := s.Next(next.Add(-time.Nanosecond))
			if !ok || !again.Equal(next) {
				t.Fatalf("%q in %q: Next(%s) = %s, %v; want %s", expr, tz, next.Add(-time.Nanosecond), again, ok, next)
			}
			prev = next
		}
	})
}
