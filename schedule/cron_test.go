package schedule

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCron_Next(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		expr  string
		tz    string
		after string
		want  []string
	}{
		{
			name: "every second", expr: "* * * * * ?", after: "2026-01-01T00:00:00.5Z",
			want: []string{"2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z", "2026-01-01T00:00:03Z"},
		},
		{
			name: "every second with stars only", expr: "* * * * * *", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z"},
		},
		{
			name: "every second across a minute", expr: "* * * * * ?", after: "2026-01-01T00:00:59Z",
			want: []string{"2026-01-01T00:01:00Z", "2026-01-01T00:01:01Z"},
		},
		{
			name: "every 5 seconds", expr: "*/5 * * * * ?", after: "2026-01-01T00:00:03Z",
			want: []string{"2026-01-01T00:00:05Z", "2026-01-01T00:00:10Z", "2026-01-01T00:00:15Z"},
		},
		{
			name: "every 5 seconds is strictly after a fire", expr: "0/5 * * * * ?", after: "2026-01-01T00:00:05Z",
			want: []string{"2026-01-01T00:00:10Z", "2026-01-01T00:00:15Z"},
		},
		{
			name: "start and step", expr: "3/20 * * * * ?", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-01T00:00:03Z", "2026-01-01T00:00:23Z", "2026-01-01T00:00:43Z", "2026-01-01T00:01:03Z"},
		},
		{
			name: "every 30 seconds in a list", expr: "0,30 * * * * ?", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-01T00:00:30Z", "2026-01-01T00:01:00Z"},
		},
		{
			name: "daily at a specific time", expr: "0 30 9 * * ?", after: "2026-01-01T10:00:00Z",
			want: []string{"2026-01-02T09:30:00Z", "2026-01-03T09:30:00Z"},
		},
		{
			name: "specific second", expr: "15 30 9 * * ?", after: "2026-01-01T09:30:15Z",
			want: []string{"2026-01-02T09:30:15Z"},
		},
		{
			name: "in a time zone, strictly after", expr: "0 0 9 * * ?", tz: "Asia/Tokyo", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"},
		},
		{
			name: "in a half-hour zone", expr: "0 0 9 * * ?", tz: "Asia/Kolkata", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-01T03:30:00Z", "2026-01-02T03:30:00Z"},
		},
		{
			name: "weekdays by name", expr: "0 0 9 ? * MON-FRI", after: "2026-01-02T10:00:00Z", // a Friday
			want: []string{"2026-01-05T09:00:00Z", "2026-01-06T09:00:00Z", "2026-01-07T09:00:00Z", "2026-01-08T09:00:00Z", "2026-01-09T09:00:00Z", "2026-01-12T09:00:00Z"},
		},
		{
			name: "lower case day names", expr: "0 0 9 ? * mon,wed", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-05T09:00:00Z", "2026-01-07T09:00:00Z", "2026-01-12T09:00:00Z"},
		},
		{
			name: "numeric day of week 1 is Sunday (Quartz)", expr: "0 0 12 ? * 1", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-04T12:00:00Z", "2026-01-11T12:00:00Z"},
		},
		{
			name: "numeric day of week 2-6 is Monday to Friday (Quartz)", expr: "0 0 12 ? * 2-6", after: "2026-01-03T00:00:00Z", // a Saturday
			want: []string{"2026-01-05T12:00:00Z", "2026-01-06T12:00:00Z", "2026-01-07T12:00:00Z", "2026-01-08T12:00:00Z", "2026-01-09T12:00:00Z", "2026-01-12T12:00:00Z"},
		},
		{
			name: "month names", expr: "0 0 0 1 JAN,JUL ?", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-07-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		},
		{
			name: "day of month with star day of week", expr: "0 0 0 */10 * *", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-11T00:00:00Z", "2026-01-21T00:00:00Z", "2026-01-31T00:00:00Z", "2026-02-01T00:00:00Z"},
		},
		{
			name: "hour range with step", expr: "0 0 8-18/4 * * ?", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-01T08:00:00Z", "2026-01-01T12:00:00Z", "2026-01-01T16:00:00Z", "2026-01-02T08:00:00Z"},
		},
		{
			name: "seven fields with star year", expr: "0 0 2 * * ? *", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-01T02:00:00Z", "2026-01-02T02:00:00Z"},
		},
		{
			name: "extra whitespace", expr: "  0\t0  2 *  * ?  ", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-01T02:00:00Z"},
		},
		{
			name: "descriptor daily", expr: "@daily", tz: "Europe/Berlin", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-01T23:00:00Z", "2026-01-02T23:00:00Z"},
		},
		{
			name: "descriptor hourly", expr: "@hourly", after: "2026-01-01T00:30:00Z",
			want: []string{"2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z"},
		},
		{
			name: "descriptor weekly is Sunday midnight", expr: "@weekly", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"},
		},
		{
			name: "29 February", expr: "0 0 0 29 2 ?", after: "2026-01-01T00:00:00Z",
			want: []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"},
		},
		{
			name: "29 February over the 2100 gap", expr: "0 0 0 29 FEB ?", after: "2097-01-01T00:00:00Z",
			want: []string{"2104-02-29T00:00:00Z"},
		},
		{
			name: "31st skips short months", expr: "0 0 0 31 * ?", after: "2026-01-31T00:00:00Z",
			want: []string{"2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			s := mustParse(t, KindCron, tt.expr, tt.tz)
			got := Preview(s, instant(t, tt.after), len(tt.want))
			requireTimes(t, instants(t, tt.want...), got)
			loc := mustZone(t, tt.tz)
			for _, g := range got {
				require.Equal(t, loc, g.Location(), "fires are reported in the job's zone")
			}
		})
	}
}

// The location of `after` does not matter, only the instant.
func TestCron_AfterLocationIrrelevant(t *testing.T) {
	t.Parallel()

	s := mustParse(t, KindCron, "0 0 2 * * ?", "Europe/Berlin")
	after := instant(t, "2026-05-01T12:00:00Z")
	want, ok := s.Next(after)
	require.True(t, ok)
	for _, tz := range []string{"America/New_York", "Asia/Tokyo", "Pacific/Kiritimati"} {
		got, ok := s.Next(after.In(mustZone(t, tz)))
		require.True(t, ok)
		require.True(t, want.Equal(got), "%s: %s != %s", tz, got, want)
	}
}

// Every fire matches the expression on the job's wall clock (outside DST
// transitions; see TestCronDST for those), and no matching wall time is
// skipped between fires.
func TestCron_FiresMatchExpression(t *testing.T) {
	t.Parallel()

	exprs := []string{
		"*/7 */13 * * * ?", "0 0 9 ? * MON-FRI", "0 15 10 ? * 2,4,6", "30 0 */3 10-20 * ?",
		"0 0 12 L * ?", "0 0 12 15W * ?", "0 0 12 LW * ?", "0 0 12 ? * 6L", "0 0 12 ? * 2#1", "0 0 22-2 ? * FRI-MON",
	}
	for _, expr := range exprs {
		t.Run(expr, func(t *testing.T) {
			t.Parallel()

			loc := mustZone(t, "Asia/Tokyo")
			s := mustParse(t, KindCron, expr, "Asia/Tokyo")
			spec := s.(*cronSchedule).spec
			from := instant(t, "2026-06-01T00:00:00Z")
			fires := Preview(s, from, 60)
			require.Len(t, fires, 60)
			prev := wallOf(from, loc)
			for _, f := range fires {
				w := wallOf(f, loc)
				require.True(t, wallMatches(spec, w), "fire %s does not match %q", w, expr)
				next, ok := bruteWallNext(spec, prev, w)
				require.True(t, ok)
				require.Equal(t, w, next, "a matching wall time before the fire %s was skipped", w)
				prev = w
			}
		})
	}
}

// Next copes with instants far from today.
func TestCron_ExtremeAfter(t *testing.T) {
	t.Parallel()

	for _, after := range []time.Time{{}, time.Unix(0, 0), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)} {
		for _, tz := range []string{"", "Europe/Berlin", "Pacific/Apia"} {
			s := mustParse(t, KindCron, "0 0 2 * * ?", tz)
			next, ok := s.Next(after)
			require.True(t, ok)
			require.True(t, next.After(after))
			require.Less(t, next.Sub(after), 48*time.Hour)
		}
	}
}

func TestCron_String(t *testing.T) {
	t.Parallel()

	s := mustParse(t, KindCron, " 0  0 2 * * ? * ", "")
	require.Equal(t, "0 0 2 * * ?", fmt.Sprint(s))
	require.Equal(t, "0 0 0 * * ?", fmt.Sprint(mustParse(t, KindCron, "@midnight", "")))
	require.Equal(t, "0 15 10 ? * 6L 2002-2005", fmt.Sprint(mustParse(t, KindCron, "0 15 10 ? * 6L 2002-2005", "")))
	require.Equal(t, "0 0 12 * * ?", fmt.Sprint(mustParse(t, KindCron, "cron(0 12 * * ? *)", "")), "EventBridge becomes Quartz with second 0")
	require.Equal(t, "0 0 9 ? * 2#1 2027", fmt.Sprint(mustParse(t, KindCron, "cron(0 9 ? * 2#1 2027)", "")))
}

func BenchmarkCronNext(b *testing.B) {
	s := mustParse(b, KindCron, "*/5 * 9-17 ? * MON-FRI", "Europe/Berlin")
	t := instant(b, "2026-03-28T00:00:00Z")
	for b.Loop() {
		next, ok := s.Next(t)
		if !ok {
			b.Fatal("no fire")
		}
		t = next
	}
}
