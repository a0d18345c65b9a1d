package schedule

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestRateExpressionsFireLikeSeconds(t *testing.T) {
	for conf, every := range map[string]time.Duration{
		"rate(1 minute)":   time.Minute,
		"rate(5 minutes)":  5 * time.Minute,
		"RATE(2 Hours)":    2 * time.Hour,
		"rate( 1 day )":    24 * time.Hour,
		"rate(365 days)":   365 * 24 * time.Hour,
		"rate(10 minutes)": 10 * time.Minute,
	} {
		s := mustParse(t, KindFixedRate, conf, "")
		from := instant(t, "2026-03-01T00:00:00Z")
		got, ok := s.Next(from)
		if !ok || !got.Equal(from.Add(every)) {
			t.Errorf("%s: Next = %v, %v; want %v", conf, got, ok, from.Add(every))
		}
	}
	for conf, want := range map[string]string{
		"rate(0 minutes)":  "not a positive whole number",
		"rate(5 seconds)":  `unit "seconds"`,
		"rate(5)":          "rate(value unit)",
		"rate(1.5 hours)":  "not a positive whole number",
		"rate(366 days)":   "more than 365 days",
		"rate(-1 minutes)": "not a positive whole number",
	} {
		_, err := Parse(KindFixedRate, conf, "")
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Field != FieldConf || !contains(pe.Msg, want) {
			t.Errorf("%s: err = %v; want a schedule_conf error mentioning %q", conf, err, want)
		}
	}
}

func TestAtExpressionIsReadInTheJobsZone(t *testing.T) {
	s := mustParse(t, KindAt, "at(2026-12-01T02:00:00)", "Europe/Berlin")
	got, ok := s.Next(instant(t, "2026-01-01T00:00:00Z"))
	if want := instant(t, "2026-12-01T01:00:00Z"); !ok || !got.Equal(want) {
		t.Fatalf("Next = %v, %v; want %v", got, ok, want)
	}
}

func TestFromExpressionSplitsEventBridgeExpressions(t *testing.T) {
	for expr, want := range map[string][2]string{
		"rate(5 minutes)":           {"fixed_rate", "300"},
		"cron(0 12 * * ? *)":        {"cron", "cron(0 12 * * ? *)"},
		"at(2027-01-02T03:04:05)":   {"at", "2027-01-02T03:04:05"},
		"  rate(1 day) ":            {"fixed_rate", "86400"},
		"cron(15 10 ? * MON-FRI *)": {"cron", "cron(15 10 ? * MON-FRI *)"},
	} {
		k, conf, err := FromExpression(expr)
		if err != nil || string(k) != want[0] || conf != want[1] {
			t.Errorf("%q: %s %q %v; want %s %q", expr, k, conf, err, want[0], want[1])
			continue
		}
		if _, err := Parse(k, conf, "UTC"); err != nil {
			t.Errorf("%q: the split does not parse: %v", expr, err)
		}
	}
	if _, _, err := FromExpression("every 5 minutes"); !errors.Is(err, ErrInvalid) {
		t.Errorf("a free text expression: err = %v; want ErrInvalid", err)
	}
}

func TestBoundFiresOnlyWithinTheActiveWindow(t *testing.T) {
	hourly := mustParse(t, KindCron, "0 0 * * * ?", "UTC")
	w := Window{Start: instant(t, "2026-03-01T10:00:00Z"), End: instant(t, "2026-03-01T13:00:00Z")}
	got := fireUntil(t, Bound(hourly, w), instant(t, "2026-03-01T00:00:00Z"), instant(t, "2026-03-02T00:00:00Z"))
	requireTimes(t, instants(t, "2026-03-01T10:00:00Z", "2026-03-01T11:00:00Z", "2026-03-01T12:00:00Z", "2026-03-01T13:00:00Z"), got)

	// A start between fires: the first fire is the schedule's next one.
	w = Window{Start: instant(t, "2026-03-01T10:30:00Z")}
	first, ok := Bound(hourly, w).Next(instant(t, "2026-03-01T00:00:00Z"))
	if want := instant(t, "2026-03-01T11:00:00Z"); !ok || !first.Equal(want) {
		t.Errorf("first fire after a mid-hour start = %v, %v; want %v", first, ok, want)
	}
	// After the end nothing fires, ever.
	if next, ok := Bound(hourly, Window{End: instant(t, "2026-03-01T13:00:00Z")}).Next(instant(t, "2026-03-01T13:00:00Z")); ok {
		t.Errorf("a fire after the end: %v", next)
	}
}

func TestBoundMovesEveryFireByTheOffset(t *testing.T) {
	hourly := mustParse(t, KindCron, "0 0 * * * ?", "UTC")
	b := Bound(hourly, Window{Offset: 17*time.Minute + 5*time.Second, End: instant(t, "2026-03-01T02:00:00Z")})
	got := fireUntil(t, b, instant(t, "2026-03-01T00:00:00Z"), instant(t, "2026-03-02T00:00:00Z"))
	// The 02:00 fire is within the window (its schedule time is the end), moved to 02:17:05.
	requireTimes(t, instants(t, "2026-03-01T00:17:05Z", "2026-03-01T01:17:05Z", "2026-03-01T02:17:05Z"), got)
	// Asked from inside a moved fire's delay, the moved fire is still next.
	next, ok := b.Next(instant(t, "2026-03-01T01:05:00Z"))
	if want := instant(t, "2026-03-01T01:17:05Z"); !ok || !next.Equal(want) {
		t.Errorf("Next(01:05) = %v, %v; want %v", next, ok, want)
	}
}

func TestFlexOffsetIsStableAndSpread(t *testing.T) {
	if FlexOffset("nightly", 0) != 0 {
		t.Fatal("no window, yet an offset")
	}
	seen := map[time.Duration]int{}
	for id := 1; id <= 10000; id++ {
		name := fmt.Sprintf("job-%d", id)
		o := FlexOffset(name, 15)
		if o < 0 || o >= 15*time.Minute || o%time.Second != 0 {
			t.Fatalf("job %d: offset %v is not whole seconds within 15 minutes", id, o)
		}
		if o != FlexOffset(name, 15) {
			t.Fatalf("job %d: offset changes between calls", id)
		}
		seen[o]++
	}
	// 10,000 jobs over 900 seconds: about 11 a second; none near all of them.
	busiest := 0
	for _, n := range seen {
		busiest = max(busiest, n)
	}
	if len(seen) < 850 || busiest > 40 {
		t.Errorf("10,000 jobs fall on %d distinct seconds, at most %d on one; want them spread over the 900", len(seen), busiest)
	}
}

func TestWindowChecksNameTheField(t *testing.T) {
	for _, m := range []int{-1, 1441} {
		var pe *ParseError
		if err := CheckFlexMinutes(m); !errors.As(err, &pe) || pe.Field != FieldFlexWindow {
			t.Errorf("flex %d: %v; want a %s error", m, err, FieldFlexWindow)
		}
	}
	for _, m := range []int{0, 1, 1440} {
		if err := CheckFlexMinutes(m); err != nil {
			t.Errorf("flex %d: %v", m, err)
		}
	}
	a, b := instant(t, "2026-03-01T10:00:00Z"), instant(t, "2026-03-01T09:00:00Z")
	var pe *ParseError
	if err := CheckActive(a, b); !errors.As(err, &pe) || pe.Field != FieldActiveUntil {
		t.Errorf("end before start: %v; want an %s error", err, FieldActiveUntil)
	}
	if err := CheckActive(a, time.Time{}); err != nil {
		t.Errorf("open end: %v", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// The flexible offset is elapsed time: across a DST change each fire is
// still exactly the offset after its schedule time, and the window's bounds
// are instants, not wall clocks.
func TestBoundAcrossDST(t *testing.T) {
	// 02:30 in Berlin does not exist on 2026-03-29 (clocks jump 02:00 → 03:00):
	// the cron fires at 03:00 local that day, as without a window.
	daily := mustParse(t, KindCron, "0 30 2 * * ?", "Europe/Berlin")
	w := Window{Start: instant(t, "2026-03-28T00:00:00Z"), End: instant(t, "2026-03-31T00:00:00Z"), Offset: 10 * time.Minute}
	got := fireUntil(t, Bound(daily, w), instant(t, "2026-03-27T00:00:00Z"), instant(t, "2026-04-02T00:00:00Z"))
	requireTimes(t, instants(t,
		"2026-03-28T01:40:00Z", // 02:30 CET + 10 min
		"2026-03-29T01:10:00Z", // the gap: 03:00 CEST (01:00Z) + 10 min
		"2026-03-30T00:40:00Z", // 02:30 CEST + 10 min
	), got)
}
