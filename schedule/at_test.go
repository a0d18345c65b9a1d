package schedule

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAt_Next(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		conf string
		tz   string
		want string // the single fire
	}{
		{name: "RFC 3339 with offset", conf: "2026-12-01T02:00:00+01:00", want: "2026-12-01T01:00:00Z"},
		{name: "RFC 3339 in UTC", conf: "2026-12-01T02:00:00Z", want: "2026-12-01T02:00:00Z"},
		{name: "RFC 3339 offset wins over time_zone", conf: "2026-12-01T02:00:00+01:00", tz: "Asia/Tokyo", want: "2026-12-01T01:00:00Z"},
		{name: "RFC 3339 fraction rounds up", conf: "2026-12-01T02:00:00.25Z", want: "2026-12-01T02:00:01Z"},
		{name: "local with space, UTC", conf: "2026-12-01 02:00:00", want: "2026-12-01T02:00:00Z"},
		{name: "local with space, in time_zone", conf: "2026-12-01 02:00:00", tz: "Europe/Berlin", want: "2026-12-01T01:00:00Z"},
		{name: "local with T, in time_zone", conf: "2026-12-01T02:00:00", tz: "Europe/Berlin", want: "2026-12-01T01:00:00Z"},
		{name: "local in summer time", conf: "2026-07-01 02:00:00", tz: "America/New_York", want: "2026-07-01T06:00:00Z"},
		{name: "local fraction rounds up", conf: "2026-12-01 02:00:00.5", want: "2026-12-01T02:00:01Z"},
		{name: "surrounding spaces", conf: "  2026-12-01 02:00:00 ", want: "2026-12-01T02:00:00Z"},
		{name: "local in a DST gap fires when the gap ends", conf: "2026-03-29 02:30:00", tz: "Europe/Berlin", want: "2026-03-29T01:00:00Z"},
		{name: "local in a repeated hour fires at the first", conf: "2026-10-25 02:30:00", tz: "Europe/Berlin", want: "2026-10-25T00:30:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			s := mustParse(t, KindAt, tt.conf, tt.tz)
			want := instant(t, tt.want)

			t.Run("future fires once", func(t *testing.T) {
				got := Preview(s, want.AddDate(0, -1, 0), 5)
				requireTimes(t, instants(t, tt.want), got)
				require.Equal(t, mustZone(t, tt.tz), got[0].Location())
			})
			t.Run("just before fires", func(t *testing.T) {
				got, ok := s.Next(want.Add(-1))
				require.True(t, ok)
				require.True(t, want.Equal(got))
			})
			t.Run("at the instant is past", func(t *testing.T) {
				_, ok := s.Next(want)
				require.False(t, ok)
			})
			t.Run("past never fires", func(t *testing.T) {
				got, ok := s.Next(want.AddDate(1, 0, 0))
				require.False(t, ok)
				require.True(t, got.IsZero())
			})
		})
	}
}
