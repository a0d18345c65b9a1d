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
		{"0 0 0 L * ?", 0, 0},                // last day of the month
		{"0 0 0 ? * 6#3", 0, 0},              // third Friday
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

// FuzzCronBruteForce compares Next with bruteNext, which walks instants
// minute by minute (second by second inside a matching minute) and applies
// the matching and DST rules literally. Over a 35-day horizon both must
// find the same fires. The seed corpus runs in every `go test`.
func FuzzCronBruteForce(f *testing.F) {
	seeds := []struct {
		expr  string
		after int64
		zone  uint8
	}{
		{"0 30 2 ? * 1", 1774137600, 1},             // Berlin, Sundays across spring forward
		{"0 */20 2 * * ?", 1792796400, 1},           // Berlin fall back
		{"15 30 1 ? * SUN", 1772348400, 2},          // New York spring forward
		{"0 30 1 ? * 1#1", 1790812800, 2},           // New York fall back, first Sunday
		{"*/30 */7 * * * ?", 1775228400, 3},         // Lord Howe half-hour shift
		{"0 0 12 L * ?", 1322697600, 4},             // Apia skipped 30 Dec 2011
		{"0 0 0 LW * ?", 1541030400, 5},             // Sao Paulo midnight gap
		{"0 0 9 15W * ?", 1767225600, 0},            //
		{"0 0 9 1W,L-2 * ?", 1785542400, 0},         //
		{"0 0 8 ? * 6L", 1767225600, 6},             //
		{"0 0 8 ? * 2#5", 1767225600, 7},            //
		{"0 0 22-2 ? * FRI-MON", 1767225600, 8},     //
		{"0 15 10 ? * 6L 2002-2005", 1130803200, 0}, // Quartz tutorial
		{"0 0 0 L-30 * ? 2026/2", 1767225600, 9},    // only 31-day months, every other year
		{"cron(0/15 8-17 ? * MON-FRI *)", 1767225600, 1},
		{"cron(0 9 ? * 2#1 2026-2027)", 1798675200, 2},
		{"30 * * * * ?", 1774746000, 1},
		{"0 0 2 ? * L", 1774742400, 1},
	}
	for _, s := range seeds {
		f.Add(s.expr, s.after, s.zone)
	}
	f.Fuzz(func(t *testing.T, expr string, afterSec int64, zone uint8) {
		tz := fuzzZones[int(zone)%len(fuzzZones)]
		s, err := Parse(KindCron, expr, tz)
		if err != nil {
			return
		}
		// Keep `after` between 1970 and 2100.
		const span = 4102444800
		sec := afterSec % span
		if sec < 0 {
			sec += span
		}
		after := time.Unix(sec, 0).UTC()
		for range 3 {
			until := after.Add(35 * 24 * time.Hour)
			want, wantOK := bruteNext(t, s, after, until)
			got, gotOK := s.Next(after)
			if wantOK {
				if !gotOK || !got.Equal(want) {
					t.Fatalf("%q in %q: Next(%s) = %s, %v; brute force finds %s", expr, tz, after, got, gotOK, want)
				}
			} else if gotOK && !got.After(until) {
				t.Fatalf("%q in %q: Next(%s) = %s; brute force finds no fire up to %s", expr, tz, after, got, until)
			}
			if !gotOK {
				return
			}
			after = got
		}
	})
}
