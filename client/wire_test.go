package client_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/ringjob/ringjob/client"
)

// The job bodies keep their wire form now that their settings are declared
// once (apitypes): the same keys, in the same order, zero values left out.
func TestJobBodiesKeepTheirWireForm(t *testing.T) {
	on := true
	in := client.JobInput{GroupID: 7, Name: "close", JobFields: client.JobFields{ScheduleType: "cron", ScheduleConf: "0 0 2 * * ?", RetryCount: 2},
		ChildJobIDs: []int64{9}, JobLimits: client.JobLimits{AlarmChannels: []string{"pager"}}, Enabled: &on}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	require.Equal(t, `{"group_id":7,"name":"close","schedule_type":"cron","schedule_conf":"0 0 2 * * ?","retry_count":2,"child_job_ids":[9],"alarm_channels":["pager"],"enabled":true}`, string(b))
	b, err = json.Marshal(client.JobInput{Name: "bare"})
	require.NoError(t, err)
	require.Equal(t, `{"group_id":0,"name":"bare"}`, string(b))

	aj := client.ApplyJob{Group: "billing", Name: "close", JobFields: client.JobFields{Description: "books", RetryMaxDelaySec: 60},
		Children: []string{"notify"}, JobLimits: client.JobLimits{MaxInFlight: 1}}
	b, err = json.Marshal(aj)
	require.NoError(t, err)
	require.Equal(t, `{"group":"billing","name":"close","description":"books","retry_max_delay_sec":60,"children":["notify"],"max_in_flight":1,"enabled":false}`, string(b))
	y, err := yaml.Marshal(aj)
	require.NoError(t, err)
	require.Equal(t, "group: billing\nname: close\ndescription: books\nretry_max_delay_sec: 60\nchildren:\n    - notify\nmax_in_flight: 1\nenabled: false\n", string(y))
	var back client.ApplyJob
	require.NoError(t, yaml.Unmarshal(y, &back))
	require.Equal(t, aj, back)
}
