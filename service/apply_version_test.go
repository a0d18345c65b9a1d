package service

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/apitypes"
)

// A plan's versions hash every field of a definition as they always have
// (written down before the job settings moved to one declaration), so a plan made
// by an earlier release still applies.
func TestVersionsStayTheSame(t *testing.T) {
	d := jobDef{JobFields: apitypes.JobFields{Description: "a <b> & c", ScheduleType: "cron", ScheduleConf: "0 0 2 * * ?", TimeZone: "Europe/Berlin",
		MisfirePolicy: "do_nothing", Handler: "h", Params: "p=1", RouteStrategy: "first", BlockStrategy: "SERIAL_EXECUTION", TimeoutSec: 30,
		RetryCount: 2, ShardCount: 1, PinnedTargets: []string{"local://echo"}, RetryBackoff: "fixed", RetryDelaySec: 5, RetryMaxDelaySec: 0},
		Children: []string{"billing/notify"}, JobLimits: apitypes.JobLimits{MaxInFlight: 3, AlarmChannels: []string{}}, Enabled: true}
	require.Equal(t, "24c9d93f9caceaf8329f", versionOf(d))
	require.Equal(t, "a8ff85512d9dfa7d4fc3", versionOf(groupDef{Title: "T", Members: []string{}, Protocol: "", AcceptRegistrations: true}))

	diff := diffDefs(nil, d)
	require.Len(t, diff, 20, "every field, the embedded ones too")
	require.Equal(t, "cron", diff["schedule_type"].After)
	require.Equal(t, 3, diff["max_in_flight"].After)
	e := d
	e.JobLimits.MaxInFlight = 4
	require.Equal(t, map[string]FieldChange{"max_in_flight": {Before: 3, After: 4}}, diffDefs(d, e))
}

// A schedule option changes the version only when it is set.
func TestScheduleOptionsChangeTheVersionOnlyWhenSet(t *testing.T) {
	d := jobDef{JobFields: apitypes.JobFields{ScheduleType: "cron", ScheduleConf: "0 0 2 * * ?"}}
	base := versionOf(d)
	e := d
	e.FlexibleWindowMin = 15
	require.NotEqual(t, base, versionOf(e))
	require.Equal(t, map[string]FieldChange{"flexible_window_min": {Before: 0, After: 15}}, diffDefs(d, e))
	require.Contains(t, diffDefs(nil, e), "flexible_window_min")
	require.NotContains(t, diffDefs(nil, d), "active_from", "an unset option is not listed in a create")
}
