package schedule

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// every returns the instants from first, step apart, n of them, as RFC 3339 strings.
func every(t testing.TB, first string, step time.Duration, n int) []string {
	t.Helper()
	f := instant(t, first)
	out := make([]string, n)
	for i := range out {
		out[i] = f.Add(time.Duration(i) * step).Format(time.RFC3339)
	}
	return out
}

func TestCronDST(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name        string
		tz          string
		expr        string
		from, until string // fires in (from, until]
		want        []string
	}{
		// Europe/Berlin, spring forward 2026-03-29 02:00 CET -> 03:00 CEST (01:00Z).
		{
			name: "Berlin spring daily 02:30 fires once at the gap end", tz: "Europe/Berlin", expr: "0 30 2 * * ?",
			from: "2026-03-28T23:00:00Z", until: "2026-03-29T22:00:00Z",
			want: []string{"2026-03-29T01:00:00Z"},
		},
		{
			name: "Berlin spring every minute of hour 2 fires once", tz: "Europe/Berlin", expr: "0 * 2 * * ?",
			from: "2026-03-28T23:00:00Z", until: "2026-03-29T22:00:00Z",
			want: []string{"2026-03-29T01:00:00Z"},
		},
		{
			name: "Berlin spring every second of hour 2 fires once", tz: "Europe/Berlin", expr: "* * 2 * * ?",
			from: "2026-03-28T23:00:00Z", until: "2026-03-29T22:00:00Z",
			want: []string{"2026-03-29T01:00:00Z"},
		},
		{
			name: "Berlin spring every 15 minutes: 23 hours, 92 fires, 03:00 merged with the gap", tz: "Europe/Berlin", expr: "0 */15 * * * ?",
			from: "2026-03-28T22:59:59Z", until: "2026-03-29T21:59:59Z",
			want: every(t, "2026-03-28T23:00:00Z", 15*time.Minute, 92),
		},
		{
			name: "Berlin spring day before and after are normal", tz: "Europe/Berlin", expr: "0 30 2 * * ?",
			from: "2026-03-27T00:00:00Z", until: "2026-03-31T00:00:00Z",
			want: []string{"2026-03-27T01:30:00Z", "2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"},
		},
		// Europe/Berlin, fall back 2026-10-25 03:00 CEST -> 02:00 CET (01:00Z).
		{
			name: "Berlin fall daily 02:30 fires once at the first occurrence", tz: "Europe/Berlin", expr: "0 30 2 * * ?",
			from: "2026-10-24T22:00:00Z", until: "2026-10-25T23:00:00Z",
			want: []string{"2026-10-25T00:30:00Z"},
		},
		{
			name: "Berlin fall every minute of hour 2 fires once per wall minute", tz: "Europe/Berlin", expr: "0 * 2 * * ?",
			from: "2026-10-24T22:00:00Z", until: "2026-10-25T23:00:00Z",
			want: every(t, "2026-10-25T00:00:00Z", time.Minute, 60),
		},
		{
			name: "Berlin fall every second of hour 2 fires once per wall second", tz: "Europe/Berlin", expr: "* * 2 * * ?",
			from: "2026-10-24T22:00:00Z", until: "2026-10-25T23:00:00Z",
			want: every(t, "2026-10-25T00:00:00Z", time.Second, 3600),
		},
		{
			name: "Berlin fall every 15 minutes: 96 fires, none in the repeated hour", tz: "Europe/Berlin", expr: "0 */15 * * * ?",
			from: "2026-10-24T21:59:59Z", until: "2026-10-25T22:59:59Z",
			want: append(every(t, "2026-10-24T22:00:00Z", 15*time.Minute, 12), every(t, "2026-10-25T02:00:00Z", 15*time.Minute, 84)...),
		},
		{
			name: "Berlin fall from inside the repeated hour waits for 03:00", tz: "Europe/Berlin", expr: "0 */15 * * * ?",
			from: "2026-10-25T01:15:00Z", until: "2026-10-25T02:30:00Z",
			want: []string{"2026-10-25T02:00:00Z", "2026-10-25T02:15:00Z", "2026-10-25T02:30:00Z"},
		},
		{
			name: "Berlin fall from inside the repeated hour does not fire hour 2 again", tz: "Europe/Berlin", expr: "0 * 2 * * ?",
			from: "2026-10-25T01:00:00Z", until: "2026-10-26T01:00:00Z",
			want: []string{"2026-10-26T01:00:00Z"},
		},
		// America/New_York, spring forward 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z).
		{
			name: "New York spring daily 02:30 fires once at the gap end", tz: "America/New_York", expr: "0 30 2 * * ?",
			from: "2026-03-08T05:00:00Z", until: "2026-03-09T04:00:00Z",
			want: []string{"2026-03-08T07:00:00Z"},
		},
		{
			name: "New York spring every minute of hour 2 fires once", tz: "America/New_York", expr: "0 * 2 * * ?",
			from: "2026-03-08T05:00:00Z", until: "2026-03-09T04:00:00Z",
			want: []string{"2026-03-08T07:00:00Z"},
		},
		// America/New_York, fall back 2026-11-01 02:00 EDT -> 01:00 EST (06:00Z).
		{
			name: "New York fall daily 02:30 is not repeated and fires once", tz: "America/New_York", expr: "0 30 2 * * ?",
			from: "2026-11-01T04:00:00Z", until: "2026-11-02T05:00:00Z",
			want: []string{"2026-11-01T07:30:00Z"},
		},
		{
			name: "New York fall daily 01:30 fires once at the first occurrence", tz: "America/New_York", expr: "0 30 1 * * ?",
			from: "2026-11-01T04:00:00Z", until: "2026-11-02T05:00:00Z",
			want: []string{"2026-11-01T05:30:00Z"},
		},
		{
			name: "New York fall every minute of hour 1 fires once per wall minute", tz: "America/New_York", expr: "0 * 1 * * ?",
			from: "2026-11-01T04:00:00Z", until: "2026-11-02T05:00:00Z",
			want: every(t, "2026-11-01T05:00:00Z", time.Minute, 60),
		},
		{
			name: "New York fall every minute of hour 2 fires once per wall minute", tz: "America/New_York", expr: "0 * 2 * * ?",
			from: "2026-11-01T04:00:00Z", until: "2026-11-02T05:00:00Z",
			want: every(t, "2026-11-01T07:00:00Z", time.Minute, 60),
		},
		// Other shapes of transition.
		{
			name: "Lord Howe half-hour gap", tz: "Australia/Lord_Howe", expr: "0 15 2 * * ?",
			from: "2026-10-03T13:00:00Z", until: "2026-10-04T13:00:00Z",
			want: []string{"2026-10-03T15:30:00Z"},
		},
		{
			name: "Lord Howe half-hour repeat", tz: "Australia/Lord_Howe", expr: "0 45 1 * * ?",
			from: "2026-04-04T13:00:00Z", until: "2026-04-05T13:00:00Z",
			want: []string{"2026-04-04T14:45:00Z"},
		},
		{
			name: "Apia skipped a whole day: its noon fires once when the day ends", tz: "Pacific/Apia", expr: "0 0 12 * * ?",
			from: "2011-12-28T00:00:00Z", until: "2011-12-31T23:00:00Z",
			want: []string{"2011-12-28T22:00:00Z", "2011-12-29T22:00:00Z", "2011-12-30T10:00:00Z", "2011-12-30T22:00:00Z", "2011-12-31T22:00:00Z"},
		},
		{
			name: "Sao Paulo missing midnight", tz: "America/Sao_Paulo", expr: "0 0 0 * * ?",
			from: "2018-11-03T00:00:00Z", until: "2018-11-05T12:00:00Z",
			want: []string{"2018-11-03T03:00:00Z", "2018-11-04T03:00:00Z", "2018-11-05T02:00:00Z"},
		},
		{
			name: "Sao Paulo repeated hour before midnight", tz: "America/Sao_Paulo", expr: "0 30 23 * * ?",
			from: "2018-02-17T12:00:00Z", until: "2018-02-19T12:00:00Z",
			want: []string{"2018-02-18T01:30:00Z", "2018-02-19T02:30:00Z"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			s := mustParse(t, KindCron, tt.expr, tt.tz)
			got := fireUntil(t, s, instant(t, tt.from), instant(t, tt.until))
			requireTimes(t, instants(t, tt.want...), got)
		})
	}
}

// TestCronDST_Oracle compares chained Next across transitions with a brute
// force reading of the rules: take every wall time the expression matches,
// map it to the first instant showing it or, if no instant does, to the
// first instant showing a later wall time; fire once per distinct instant.
func TestCronDST_Oracle(t *testing.T) {
	t.Parallel()

	windows := []struct {
		tz       string
		from, to string // UTC days
	}{
		{tz: "Europe/Berlin", from: "2026-03-27", to: "2026-03-31"},
		{tz: "Europe/Berlin", from: "2026-10-23", to: "2026-10-27"},
		{tz: "America/New_York", from: "2026-03-06", to: "2026-03-10"},
		{tz: "America/New_York", from: "2026-10-30", to: "2026-11-03"},
		{tz: "Australia/Lord_Howe", from: "2026-04-03", to: "2026-04-07"},
		{tz: "Australia/Lord_Howe", from: "2026-10-02", to: "2026-10-06"},
		{tz: "Pacific/Apia", from: "2011-12-28", to: "2012-01-01"},
		{tz: "America/Sao_Paulo", from: "2018-02-16", to: "2018-02-20"},
		{tz: "America/Sao_Paulo", from: "2018-11-02", to: "2018-11-06"},
		{tz: "Asia/Tehran", from: "2022-03-20", to: "2022-03-24"},
		{tz: "Asia/Tehran", from: "2022-09-20", to: "2022-09-24"},
		{tz: "Asia/Kolkata", from: "2026-03-27", to: "2026-03-31"},
		{tz: "", from: "2026-03-27", to: "2026-03-31"},
	}
	exprs := []string{
		"0 * * * * ?", "0 */15 * * * ?", "0 0,30 * * * ?", "0 30 2 * * ?", "0 45 1 * * ?",
		"0 0 0 * * ?", "0 30 23 * * ?", "0 0 12 * * ?", "*/20 * 0-3 * * ?", "0 0 2 ? * SUN",
	}
	for _, w := range windows {
		for _, expr := range exprs {
			t.Run(w.tz+" "+w.from+" "+expr, func(t *testing.T) {
				t.Parallel()

				loc := mustZone(t, w.tz)
				from := instant(t, w.from+"T00:00:00Z")
				until := instant(t, w.to+"T00:00:00Z")
				want := oracleFires(t, expr, loc, from, until)
				got := fireUntil(t, mustParse(t, KindCron, expr, w.tz), from, until)
				requireTimes(t, want, got)

				// Restarting from any fire, or from just before it, continues the same sequence.
				for i := 0; i < len(got)-1; i += 7 {
					next, ok := mustParse(t, KindCron, expr, w.tz).Next(got[i])
					require.True(t, ok)
					require.True(t, got[i+1].Equal(next))
					next, ok = mustParse(t, KindCron, expr, w.tz).Next(got[i].Add(-time.Nanosecond))
					require.True(t, ok)
					require.True(t, got[i].Equal(next))
				}
			})
		}
	}
}

func oracleFires(t testing.TB, expr string, loc *time.Location, from, until time.Time) []time.Time {
	t.Helper()
	spec := mustParse(t, KindCron, expr, loc.String()).(*cronSchedule).spec

	var offsets []time.Duration
	for i := from.Add(-48 * time.Hour); i.Before(until.Add(48 * time.Hour)); i = i.Add(15 * time.Minute) {
		_, off := i.In(loc).Zone()
		if d := time.Duration(off) * time.Second; !slices.Contains(offsets, d) {
			offsets = append(offsets, d)
		}
	}
	resolve := func(w time.Time) time.Time {
		var first time.Time
		for _, off := range offsets {
			if i := w.Add(-off); wallOf(i, loc).Equal(w) && (first.IsZero() || i.Before(first)) {
				first = i
			}
		}
		if !first.IsZero() {
			return first
		}
		// No instant before w-maxOffset shows w or later, so scan from there.
		for i := w.Add(-slices.Max(offsets)).Truncate(time.Minute); ; i = i.Add(time.Minute) {
			if wallOf(i, loc).After(w) {
				return i
			}
		}
	}

	var out []time.Time
	seen := map[int64]bool{}
	end := wallOf(until, loc).Add(30 * time.Hour)
	for w, ok := bruteWallNext(spec, wallOf(from, loc).Add(-30*time.Hour), end); ok; w, ok = bruteWallNext(spec, w, end) {
		if i := resolve(w); i.After(from) && !i.After(until) && !seen[i.UnixNano()] {
			seen[i.UnixNano()] = true
			out = append(out, i)
		}
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}
