package schedule

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParse_BadInput(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		kind  Kind
		conf  string
		tz    string
		field string
		want  []string // substrings of the message
	}{
		// cron
		{name: "cron empty", kind: KindCron, conf: "", field: FieldConf, want: []string{"cron expression is empty", "six fields with seconds first", "(fields: sec min hour day-of-month month day-of-week [year])"}},
		{name: "cron blank", kind: KindCron, conf: "   ", field: FieldConf, want: []string{"cron expression is empty"}},
		{name: "cron five fields", kind: KindCron, conf: "0 2 * * *", field: FieldConf, want: []string{`cron "0 2 * * *": has 5 fields`, "six are required with seconds first", `prefix "0 "`, `"0 0 2 * * *"`}},
		{name: "cron hour 25", kind: KindCron, conf: "0 0 25 * * ?", field: FieldConf, want: []string{`cron "0 0 25 * * ?": hour 25 is out of range 0-23 (fields: sec min hour day-of-month month day-of-week [year])`}},
		{name: "cron second 60", kind: KindCron, conf: "60 * * * * ?", field: FieldConf, want: []string{"second 60 is out of range 0-59"}},
		{name: "cron minute 99", kind: KindCron, conf: "0 99 * * * ?", field: FieldConf, want: []string{"minute 99 is out of range 0-59"}},
		{name: "cron day 0", kind: KindCron, conf: "0 0 0 0 * ?", field: FieldConf, want: []string{"day-of-month 0 is out of range 1-31"}},
		{name: "cron month 13", kind: KindCron, conf: "0 0 0 ? 13 *", field: FieldConf, want: []string{"month 13 is out of range 1-12"}},
		{name: "cron garbage", kind: KindCron, conf: "garbage", field: FieldConf, want: []string{`cron "garbage": has 1 field,`, "six are required"}},
		{name: "cron garbage fields", kind: KindCron, conf: "a b c d e f", field: FieldConf, want: []string{`second "a" is not a number`}},
		{name: "cron bad month name", kind: KindCron, conf: "0 0 0 1 JANUARY ?", field: FieldConf, want: []string{`month "JANUARY" is not a number or a name (JAN-DEC)`}},
		{name: "cron bad day name", kind: KindCron, conf: "0 0 0 ? * MOX", field: FieldConf, want: []string{`day-of-week "MOX" is not a number or a name (SUN-SAT)`}},
		{name: "cron eight fields", kind: KindCron, conf: "0 0 2 * * ? * *", field: FieldConf, want: []string{"has 8 fields"}},
		{name: "cron year out of range", kind: KindCron, conf: "0 0 2 * * ? 1969", field: FieldConf, want: []string{"year 1969 is out of range 1970-2199"}},
		{name: "cron year range backwards", kind: KindCron, conf: "0 0 2 * * ? 2030-2026", field: FieldConf, want: []string{`year range "2030-2026" runs backwards`}},
		{name: "cron dow 0", kind: KindCron, conf: "0 0 2 ? * 0", field: FieldConf, want: []string{"day-of-week 0 is out of range 1-7", "1=SUN, 2=MON ... 7=SAT", "Quartz, XXL-JOB and EventBridge", "MON-FRI"}},
		{name: "cron dow range from 0", kind: KindCron, conf: "0 0 2 ? * 0-6", field: FieldConf, want: []string{"day-of-week 0 is out of range 1-7"}},
		{name: "cron dow 8", kind: KindCron, conf: "0 0 2 ? * 8", field: FieldConf, want: []string{"day-of-week 8 is out of range 1-7"}},
		{name: "cron L-31 in dom", kind: KindCron, conf: "0 0 0 L-31 * ?", field: FieldConf, want: []string{`day-of-month "L-31"`, "n from 0 to 30"}},
		{name: "cron L garbage in dom", kind: KindCron, conf: "0 0 0 LX * ?", field: FieldConf, want: []string{`day-of-month "LX"`, "LW (last weekday)"}},
		{name: "cron W on a range", kind: KindCron, conf: "0 0 0 1-5W * ?", field: FieldConf, want: []string{`day-of-month "1-5W": W takes a single day`}},
		{name: "cron 32W", kind: KindCron, conf: "0 0 0 32W * ?", field: FieldConf, want: []string{"W takes a single day from 1 to 31"}},
		{name: "cron hash in dom", kind: KindCron, conf: "0 0 0 6#3 * ?", field: FieldConf, want: []string{"# (nth weekday of the month) belongs in day-of-week"}},
		{name: "cron hash six", kind: KindCron, conf: "0 0 0 ? * 6#6", field: FieldConf, want: []string{`day-of-week "6#6": # takes an occurrence from 1 to 5`}},
		{name: "cron hash in a list", kind: KindCron, conf: "0 0 0 ? * 6#3,2", field: FieldConf, want: []string{"L and # must stand alone in day-of-week"}},
		{name: "cron L in a dow list", kind: KindCron, conf: "0 0 0 ? * 6L,2", field: FieldConf, want: []string{"L and # must stand alone"}},
		{name: "cron 8L", kind: KindCron, conf: "0 0 0 ? * 8L", field: FieldConf, want: []string{`day-of-week "8L": L after a day means its last occurrence`}},
		{name: "cron L in hours", kind: KindCron, conf: "0 0 L * * ?", field: FieldConf, want: []string{`hour "L": L, W and # are only allowed in day-of-month`}},
		{name: "cron name with step", kind: KindCron, conf: "0 0 0 ? * MON/2", field: FieldConf, want: []string{`day-of-week "MON/2": a step after a name`, "2/2"}},
		{name: "cron name range with step", kind: KindCron, conf: "0 0 0 1 JAN-JUN/2 ?", field: FieldConf, want: []string{`month "JAN-JUN/2": a step after a name`}},
		{name: "cron EventBridge without cron()", kind: KindCron, conf: "0 12 * * ? *", field: FieldConf, want: []string{"reads as an EventBridge expression", `"cron(0 12 * * ? *)"`}},
		{name: "cron EventBridge with five fields", kind: KindCron, conf: "cron(0 12 * * ?)", field: FieldConf, want: []string{"an EventBridge expression cron(...) has six fields", "got 5"}},
		{name: "cron EventBridge rate", kind: KindCron, conf: "rate(5 minutes)", field: FieldConf, want: []string{"rate() and at() expressions are not cron", "fixed_rate"}},
		{name: "cron years in the past only still parse but L-30 of February never", kind: KindCron, conf: "0 0 0 L-30 FEB ?", field: FieldConf, want: []string{"never fires"}},
		{name: "cron fifth Monday of February in a year without one", kind: KindCron, conf: "0 0 0 ? FEB 2#5 2027", field: FieldConf, want: []string{"never fires"}},
		{name: "cron dom and dow both set", kind: KindCron, conf: "0 0 2 1 * MON", field: FieldConf, want: []string{`day-of-month "1" and day-of-week "MON" are both set`, "set the other to ?"}},
		{name: "cron feb 30", kind: KindCron, conf: "0 0 0 30 2 ?", field: FieldConf, want: []string{`day-of-month "30" never occurs in month "2"`, "never fire"}},
		{name: "cron 31 in short months", kind: KindCron, conf: "0 0 0 31 APR,JUN,SEP,NOV ?", field: FieldConf, want: []string{"never occurs"}},
		{name: "cron step zero", kind: KindCron, conf: "*/0 * * * * ?", field: FieldConf, want: []string{`second step "0" in "*/0" must be a whole number from 1 to 60`}},
		{name: "cron step too big", kind: KindCron, conf: "0 0 */25 * * ?", field: FieldConf, want: []string{`hour step "25" in "*/25" must be a whole number from 1 to 24`}},
		{name: "cron step garbage", kind: KindCron, conf: "*/x * * * * ?", field: FieldConf, want: []string{`second step "x"`}},
		{name: "cron two slashes", kind: KindCron, conf: "*/5/2 * * * * ?", field: FieldConf, want: []string{"more than one /"}},
		{name: "cron negative", kind: KindCron, conf: "0 0 -5 * * ?", field: FieldConf, want: []string{`hour "-5" is missing a number`}},
		{name: "cron question mark in seconds", kind: KindCron, conf: "? * * * * *", field: FieldConf, want: []string{"? is only allowed in day-of-month and day-of-week; use * in second"}},
		{name: "cron question mark with step", kind: KindCron, conf: "0 0 0 ?/2 * *", field: FieldConf, want: []string{"? cannot take a step"}},
		{name: "cron question mark in a list", kind: KindCron, conf: "0 0 0 ? * ?,MON", field: FieldConf, want: []string{`day-of-week "?,MON": ? must stand alone`}},
		{name: "cron empty list item", kind: KindCron, conf: "0 0 0 1,,2 * ?", field: FieldConf, want: []string{"day-of-month has an empty item"}},
		{name: "cron every descriptor", kind: KindCron, conf: "@every 5s", field: FieldConf, want: []string{"@every is not accepted", "fixed_rate"}},
		{name: "cron unknown descriptor", kind: KindCron, conf: "@fortnightly", field: FieldConf, want: []string{"unknown descriptor"}},
		{name: "cron TZ prefix", kind: KindCron, conf: "TZ=Europe/Berlin 0 0 2 * * ?", field: FieldConf, want: []string{"TZ= prefix is not accepted", "time_zone"}},
		// time zone
		{name: "unknown time zone", kind: KindCron, conf: "0 0 2 * * ?", tz: "Mars/Olympus_Mons", field: FieldTimeZone, want: []string{`time_zone "Mars/Olympus_Mons" is not a known IANA time zone`, "Europe/Berlin"}},
		{name: "unknown time zone on fixed_rate", kind: KindFixedRate, conf: "30", tz: "Nowhere", field: FieldTimeZone, want: []string{`time_zone "Nowhere"`}},
		{name: "machine local time zone", kind: KindCron, conf: "0 0 2 * * ?", tz: "Local", field: FieldTimeZone, want: []string{`time_zone "Local" depends on the machine`}},
		// fixed_rate
		{name: "fixed_rate empty", kind: KindFixedRate, conf: "", field: FieldConf, want: []string{"fixed_rate needs an interval in seconds"}},
		{name: "fixed_rate zero", kind: KindFixedRate, conf: "0", field: FieldConf, want: []string{`fixed_rate "0" must be at least 1 second`, "between 1 and 31536000"}},
		{name: "fixed_rate negative", kind: KindFixedRate, conf: "-5", field: FieldConf, want: []string{`fixed_rate "-5" must be at least 1 second`}},
		{name: "fixed_rate huge negative", kind: KindFixedRate, conf: "-99999999999999999999", field: FieldConf, want: []string{"must be at least 1 second"}},
		{name: "fixed_rate just too big", kind: KindFixedRate, conf: "31536001", field: FieldConf, want: []string{`fixed_rate "31536001" is more than 31536000 seconds (365 days)`}},
		{name: "fixed_rate overflow", kind: KindFixedRate, conf: "99999999999999999999", field: FieldConf, want: []string{"is more than 31536000 seconds"}},
		{name: "fixed_rate decimal", kind: KindFixedRate, conf: "1.5", field: FieldConf, want: []string{`fixed_rate "1.5" is not a whole number of seconds`}},
		{name: "fixed_rate duration", kind: KindFixedRate, conf: "5s", field: FieldConf, want: []string{"is not a whole number of seconds"}},
		{name: "fixed_rate sign only", kind: KindFixedRate, conf: "-", field: FieldConf, want: []string{"is not a whole number of seconds"}},
		// at
		{name: "at empty", kind: KindAt, conf: "", field: FieldConf, want: []string{"at needs a time", "RFC 3339"}},
		{name: "at words", kind: KindAt, conf: "tomorrow", field: FieldConf, want: []string{`at "tomorrow" is not a valid time`, `"2026-12-01T02:00:00+01:00"`, `"2026-12-01 02:00:00"`}},
		{name: "at month 13", kind: KindAt, conf: "2026-13-01 02:00:00", field: FieldConf, want: []string{`at "2026-13-01 02:00:00" is not a valid time: month out of range`}},
		{name: "at day 31 in november", kind: KindAt, conf: "2026-11-31T02:00:00", field: FieldConf, want: []string{"day out of range"}},
		{name: "at no seconds", kind: KindAt, conf: "2026-12-01 02:00", field: FieldConf, want: []string{"is not a valid time"}},
		{name: "at bad offset", kind: KindAt, conf: "2026-12-01T02:00:00+25:00", field: FieldConf, want: []string{"is not a valid time"}},
		{name: "at date only", kind: KindAt, conf: "2026-12-01", field: FieldConf, want: []string{"is not a valid time"}},
		// none and kind
		{name: "none with conf", kind: KindNone, conf: "0 0 2 * * ?", field: FieldConf, want: []string{"schedule type none takes no schedule_conf"}},
		{name: "unknown kind", kind: Kind("daily"), conf: "", field: FieldType, want: []string{`schedule_type "daily" is unknown`, "none, cron, fixed_rate, at"}},
		{name: "empty kind", kind: Kind(""), conf: "", field: FieldType, want: []string{`schedule_type "" is unknown`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			s, err := Parse(tt.kind, tt.conf, tt.tz)
			require.Error(t, err)
			require.Nil(t, s)
			require.ErrorIs(t, err, ErrInvalid)
			var pe *ParseError
			require.True(t, errors.As(err, &pe))
			require.Equal(t, tt.field, pe.Field)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestNone(t *testing.T) {
	t.Parallel()

	for _, conf := range []string{"", "  "} {
		s := mustParse(t, KindNone, conf, "Europe/Berlin")
		next, ok := s.Next(instant(t, "2026-01-01T00:00:00Z"))
		require.False(t, ok)
		require.True(t, next.IsZero())
		require.Empty(t, Preview(s, instant(t, "2026-01-01T00:00:00Z"), 5))
	}
}

func TestPreview(t *testing.T) {
	t.Parallel()

	after := instant(t, "2026-01-01T00:00:00Z")

	t.Run("returns n fires in order", func(t *testing.T) {
		t.Parallel()
		got := Preview(mustParse(t, KindCron, "0 0 2 * * ?", "Europe/Berlin"), after, 5)
		requireTimes(t, instants(t,
			"2026-01-01T01:00:00Z", "2026-01-02T01:00:00Z", "2026-01-03T01:00:00Z",
			"2026-01-04T01:00:00Z", "2026-01-05T01:00:00Z"), got)
	})
	t.Run("stops when the schedule ends", func(t *testing.T) {
		t.Parallel()
		got := Preview(mustParse(t, KindAt, "2026-06-01 12:00:00", ""), after, 5)
		requireTimes(t, instants(t, "2026-06-01T12:00:00Z"), got)
	})
	t.Run("zero, negative and nil give nothing", func(t *testing.T) {
		t.Parallel()
		s := mustParse(t, KindFixedRate, "1", "")
		require.Empty(t, Preview(s, after, 0))
		require.Empty(t, Preview(s, after, -3))
		require.Empty(t, Preview(nil, after, 3))
	})
	t.Run("caps at MaxPreview", func(t *testing.T) {
		t.Parallel()
		got := Preview(mustParse(t, KindFixedRate, "1", ""), after, MaxPreview*5)
		require.Len(t, got, MaxPreview)
		require.Equal(t, after.Add(MaxPreview*time.Second), got[len(got)-1])
	})
}

func TestLoadZone(t *testing.T) {
	t.Parallel()

	tests := []struct {
		tz   string
		want string
	}{
		{tz: "", want: "UTC"},
		{tz: "UTC", want: "UTC"},
		{tz: "Europe/Berlin", want: "Europe/Berlin"},
		{tz: "America/New_York", want: "America/New_York"},
		{tz: "Asia/Kolkata", want: "Asia/Kolkata"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			loc := mustZone(t, tt.tz)
			require.Equal(t, tt.want, loc.String())
		})
	}
}

// Every Kind constant parses with a minimal valid conf.
func TestKinds(t *testing.T) {
	t.Parallel()

	confs := map[Kind]string{KindNone: "", KindCron: "* * * * * ?", KindFixedRate: "1", KindAt: "2026-01-01 00:00:00"}
	require.Len(t, Kinds, len(confs))
	for _, k := range Kinds {
		mustParse(t, k, confs[k], "")
	}
}
