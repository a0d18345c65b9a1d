package schedule

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUpgradeLegacyCron(t *testing.T) {
	t.Parallel()

	tests := []struct{ old, want string }{
		{old: "0 0 2 ? * 1", want: "0 0 2 ? * MON"},
		{old: "0 0 9 ? * 1-5", want: "0 0 9 ? * MON-FRI"},
		{old: "0 0 9 ? * 0,6", want: "0 0 9 ? * SUN,SAT"},
		{old: "0 0 9 ? * 0", want: "0 0 9 ? * SUN"},
		{old: "0 0 9 ? * */2", want: "0 0 9 ? * SUN,TUE,THU,SAT"},
		{old: "0 0 9 ? * 1/2", want: "0 0 9 ? * MON,WED,FRI"},
		{old: "0 0 9 ? * MON-FRI/2", want: "0 0 9 ? * MON,WED,FRI"},
		{old: "0 0 9 ? * 0-6", want: "0 0 9 ? * SUN-SAT"},
		{old: "0 0 9 ? * mon,3", want: "0 0 9 ? * MON,WED"},
		{old: "0 0 9 ? * 1-2,4-6 *", want: "0 0 9 ? * MON,TUE,THU-SAT *"},
		{old: "0 0 0 1 JAN-JUN/2 ?", want: "0 0 0 1 JAN,MAR,MAY ?"},
		{old: "0 0 0 ? JAN/3 1", want: "0 0 0 ? JAN,APR,JUL,OCT MON"},
	}
	for _, tt := range tests {
		got, changed := UpgradeLegacyCron(tt.old)
		require.True(t, changed, tt.old)
		require.Equal(t, tt.want, got, tt.old)
		again, changed := UpgradeLegacyCron(got)
		require.False(t, changed, "upgrading twice changes nothing: %s", got)
		require.Equal(t, got, again)
	}
	for _, same := range []string{
		"0 0 9 ? * MON-FRI", "0 0 9 * * ?", "0 0 9 1 * *", "0 */5 * * * ?", "@weekly", "0 0 1 1 1/2 ?",
		"0 0 2 ? * 7", "0 0 2 ? * 1-", "garbage", "0 0 2 * * ? 2026", "",
	} {
		got, changed := UpgradeLegacyCron(same)
		require.False(t, changed, same)
		require.Equal(t, same, got)
	}
}

// Every set of days written with the first dialect's numbers fires, after
// the upgrade, on exactly those weekdays.
func TestUpgradeLegacyCron_SameDays(t *testing.T) {
	t.Parallel()

	from := instant(t, "2026-01-01T00:00:00Z")
	for set := 1; set < 1<<7; set++ {
		var nums []string
		for d := range 7 {
			if set&(1<<d) != 0 {
				nums = append(nums, strconv.Itoa(d)) // 0=SUN ... 6=SAT
			}
		}
		old := "0 0 12 ? * " + strings.Join(nums, ",")
		upgraded, changed := UpgradeLegacyCron(old)
		require.True(t, changed)
		s := mustParse(t, KindCron, upgraded, "Europe/Berlin")
		seen := 0
		for _, f := range Preview(s, from, 21) {
			wd := f.Weekday()
			require.NotZero(t, set&(1<<int(wd)), "%q (from %q) fires on a %s", upgraded, old, wd)
			seen |= 1 << int(wd)
		}
		require.Equal(t, set, seen, "%q (from %q) misses days", upgraded, old)
	}
}
