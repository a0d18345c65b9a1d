package api_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/client"
)

// The schedule options travel through the API as a user writes them, the
// job's first fire honours them, and next-fires says what they do.
func TestScheduleOptionsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{noSched: true})
			gid := b.group("options", "local://echo")
			j := b.must(201, "POST", "/api/v1/jobs", map[string]any{"group_id": gid, "name": "windowed", "schedule_type": "fixed_rate",
				"schedule_conf": "rate(1 day)", "enabled": true, "active_from": "2099-01-01T00:00:00+01:00", "active_until": "2099-02-01T00:00:00Z",
				"max_event_age_sec": 3600, "after_completion": "delete", "failure_destination": "arn:aws:sqs:eu-west-1:123456789012:failures"})
			require.Equal(t, "2098-12-31T23:00:00Z", j["active_from"], "instants come back in UTC")
			require.Equal(t, "2099-02-01T00:00:00Z", j["active_until"])
			require.EqualValues(t, 3600, j["max_event_age_sec"])
			require.Equal(t, "delete", j["after_completion"])
			require.Equal(t, "arn:aws:sqs:eu-west-1:123456789012:failures", j["failure_destination"])
			require.Equal(t, "rate(1 day)", j["schedule_conf"], "an EventBridge rate() is kept as written")
			require.NotNil(t, j["next_fire_at"])
			require.GreaterOrEqual(t, *strPtr(j["next_fire_at"]), "2098-12-31T23:00:00Z", "the first fire is within the active window")
			nf := b.must(200, "GET", fmt.Sprintf("/api/v1/jobs/%d/next-fires?n=40", id(j)), nil)
			require.LessOrEqual(t, len(nf["items"].([]any)), 32, "no fire after the window")
			require.Contains(t, nf["note"], "no fire after the active window ends at 2099-02-01T00:00:00Z")
			require.Contains(t, nf["note"], "no fire before the active window opens")

			// A flexible window: the preview moves every fire by the job's offset.
			p := b.must(200, "POST", "/api/v1/next-fires", map[string]any{"schedule_type": "cron", "schedule_conf": "0 0 12 * * ?", "n": 2,
				"name": "nightly", "flexible_window_min": 30})
			require.Contains(t, p["note"], "after its schedule time")
			require.NotContains(t, p["items"].([]any)[0], "T12:00:00Z", "moved within the window")

			// The group's destination serves jobs without their own.
			g := b.must(200, "PUT", fmt.Sprintf("/api/v1/groups/%d", gid), map[string]any{"title": "", "members": []string{"local://echo"},
				"failure_destination": "https://hooks.example.com/ringjob"})
			require.Equal(t, "https://hooks.example.com/ringjob", g["failure_destination"])
			g = b.must(200, "PUT", fmt.Sprintf("/api/v1/groups/%d", gid), map[string]any{"title": "t", "members": []string{"local://echo"}})
			require.Equal(t, "https://hooks.example.com/ringjob", g["failure_destination"], "left out of a PUT, it stays")
		})
	}
}

func strPtr(v any) *string {
	s, _ := v.(string)
	return &s
}

// Jobs as code carries the options and the group's destination, and a
// second apply of the same files changes nothing.
func TestScheduleOptionsThroughApply(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{noSched: true})
			ctx := context.Background()
			cl := client.New(b.url, b.token, nil)
			in := client.ApplyInput{
				Groups: []client.ApplyGroup{{AppName: "etl-jobs", Members: []string{"local://echo"}, FailureDestination: "arn:aws:sns:us-east-1:123456789012:ops"}},
				Jobs: []client.ApplyJob{{Group: "etl-jobs", Name: "hourly", JobFields: client.JobFields{ScheduleType: "cron", ScheduleConf: "0 0 * * * ?",
					JobOptions: client.JobOptions{FlexibleWindowMin: 15, MaxEventAgeSec: 600, ActiveUntil: "2099-01-01T00:00:00Z"}}, Enabled: true}},
			}
			got, err := cl.Apply(ctx, in)
			require.NoError(t, err)
			require.Equal(t, 2, got.Summary["create"])
			again, err := cl.Apply(ctx, in)
			require.NoError(t, err)
			require.Equal(t, map[string]int{"create": 0, "update": 0, "delete": 0, "unchanged": 2}, again.Summary)
			in.Jobs[0].FlexibleWindowMin = 30
			changed, err := cl.PlanApply(ctx, in)
			require.NoError(t, err)
			require.Equal(t, "update", changesOf(changed)["job etl-jobs/hourly"])
			jobs := b.must(200, "GET", "/api/v1/jobs?q=hourly", nil)["items"].([]any)
			require.Len(t, jobs, 1)
			j := jobs[0].(map[string]any)
			require.EqualValues(t, 15, j["flexible_window_min"])
			g := b.must(200, "GET", fmt.Sprintf("/api/v1/groups/%d", int64(j["group_id"].(float64))), nil)
			require.Equal(t, "arn:aws:sns:us-east-1:123456789012:ops", g["failure_destination"])
		})
	}
}
