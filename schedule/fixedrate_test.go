package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFixedRate_Next(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		conf  string
		tz    string
		after string
		want  []string
	}{
		{name: "whole second", conf: "30", after: "2026-01-01T10:00:00Z", want: []string{"2026-01-01T10:00:30Z", "2026-01-01T10:01:00Z"}},
		{name: "rounds up a fraction", conf: "30", after: "2026-01-01T10:00:00.2Z", want: []string{"2026-01-01T10:00:31Z", "2026-01-01T10:01:01Z"}},
		{name: "rounds up a nanosecond", conf: "1", after: "2026-01-01T10:00:00.000000001Z", want: []string{"2026-01-01T10:00:02Z"}},
		{name: "rounds up almost a second", conf: "1", after: "2026-01-01T10:00:00.999999999Z", want: []string{"2026-01-01T10:00:02Z"}},
		{name: "surrounding spaces", conf: " 45 ", after: "2026-01-01T10:00:00Z", want: []string{"2026-01-01T10:00:45Z"}},
		{name: "explicit plus", conf: "+5", after: "2026-01-01T10:00:00Z", want: []string{"2026-01-01T10:00:05Z"}},
		{name: "largest interval", conf: "31536000", after: "2026-01-01T00:00:00Z", want: []string{"2027-01-01T00:00:00Z"}},
		{
			name: "time zone is irrelevant, elapsed time across spring forward", conf: "3600", tz: "Europe/Berlin",
			after: "2026-03-29T00:30:00Z", want: []string{"2026-03-29T01:30:00Z", "2026-03-29T02:30:00Z"},
		},
		{
			name: "time zone is irrelevant, elapsed time across fall back", conf: "1800", tz: "America/New_York",
			after: "2026-11-01T05:00:00Z", want: []string{"2026-11-01T05:30:00Z", "2026-11-01T06:00:00Z", "2026-11-01T06:30:00Z"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			s := mustParse(t, KindFixedRate, tt.conf, tt.tz)
			requireTimes(t, instants(t, tt.want...), Preview(s, instant(t, tt.after), len(tt.want)))
		})
	}
}

func TestFixedRate_AlwaysStrictlyAfter(t *testing.T) {
	t.Parallel()

	s := mustParse(t, KindFixedRate, "1", "")
	after := instant(t, "2026-01-01T00:00:00Z")
	for i := range 2000 {
		a := after.Add(time.Duration(i) * 777 * time.Microsecond)
		next, ok := s.Next(a)
		require.True(t, ok)
		require.True(t, next.After(a))
		require.Zero(t, next.Nanosecond())
		require.LessOrEqual(t, next.Sub(a), 2*time.Second)
		require.GreaterOrEqual(t, next.Sub(a), time.Second)
	}
}
