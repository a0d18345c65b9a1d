package schedule

import (
	"fmt"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
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
			name: "numeric day of week 0 is Sunday", expr: "0 0 12 ? * 0", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-04T12:00:00Z", "2026-01-11T12:00:00Z"},
		},
		{
			name: "numeric day of week 1-5 is Monday to Friday", expr: "0 0 12 ? * 1-5", after: "2026-01-03T00:00:00Z", // a Saturday
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

// The compiled robfig schedule matches exactly the values our validator read,
// so robfig's Vixie-style "day-of-month OR day-of-week" rule never applies.
func TestCron_MasksMatchRobfig(t *testing.T) {
	t.Parallel()

	exprs := []string{
		"* * * * * ?", "*/5 * * * * ?", "3/20 1-10/3 0,12 * JAN-MAR,DEC ?",
		"0 0 9 ? * MON-FRI", "0 0 0 ? * sun,SAT", "0 0 0 1,15,31 */2 *", "0 0 0 ? * 0-6/2",
		"59 59 23 31 12 ?", "0 0 0 ? * *",
	}
	for _, expr := range exprs {
		t.Run(expr, func(t *testing.T) {
			t.Parallel()

			fields, err := cronSplit(expr)
			require.NoError(t, err)
			s := mustParse(t, KindCron, expr, "").(*cronSchedule)
			got := []uint64{s.spec.Second, s.spec.Minute, s.spec.Hour, s.spec.Dom, s.spec.Month, s.spec.Dow}
			for i, f := range cronFields {
				mask, msg := f.parse(fields[i])
				require.Empty(t, msg)
				require.Equal(t, mask, got[i]&^(1<<63), "field %s", f.name)
			}
			require.Equal(t, time.UTC, s.spec.Location)
		})
	}
}

// Every fire matches the expression on the job's wall clock (outside DST
// transitions; see TestCronDST for those).
func TestCron_FiresMatchExpression(t *testing.T) {
	t.Parallel()

	p := cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)
	exprs := []string{"*/7 */13 * * * ?", "0 0 9 ? * MON-FRI", "0 15 10 ? * 1,3,5", "30 0 */3 10-20 * ?"}
	for _, expr := range exprs {
		t.Run(expr, func(t *testing.T) {
			t.Parallel()

			rs, err := p.Parse(expr)
			require.NoError(t, err)
			loc := mustZone(t, "Asia/Tokyo")
			s := mustParse(t, KindCron, expr, "Asia/Tokyo")
			fires := Preview(s, instant(t, "2026-06-01T00:00:00Z"), 200)
			require.Len(t, fires, 200)
			for _, f := range fires {
				w := f.In(loc)
				// A matching wall time is the next match after the second before it.
				require.Equal(t, w, rs.Next(w.Add(-time.Second)).In(loc), "fire %s does not match %q", w, expr)
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
