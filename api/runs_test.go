package api_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
)

func TestTriggerIdempotentAndLog(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{})
			gid := b.group("echo-group", "local://echo")
			j := b.job(map[string]any{"group_id": gid, "name": "say hello", "params": "job params"})
			path := fmt.Sprintf("/api/v1/jobs/%d/trigger", id(j))

			first := b.must(201, "POST", path, map[string]any{"params": "hello from ringjob"}, "Idempotency-Key", "key-123")
			second := b.must(200, "POST", path, map[string]any{"params": "hello from ringjob"}, "Idempotency-Key", "key-123")
			require.Equal(t, first["id"], second["id"])
			require.Equal(t, "manual", first["trigger_type"])
			require.Equal(t, "key-123", first["idempotency_key"])
			require.Equal(t, "say hello", first["job_name"], "a run names its job")
			require.Equal(t, "echo-group", first["app_name"], "and its job's group")
			require.Equal(t, 1, b.counts()[2], "one run for one key")

			run := b.waitRun(id(first), "success", func(r map[string]any) bool { return r["state"] == "succeeded" })
			require.Equal(t, float64(200), run["result_code"])
			for _, f := range []string{"scheduled_at", "dispatched_at", "finished_at"} {
				_, err := time.Parse(time.RFC3339, run[f].(string))
				require.NoError(t, err, f)
			}

			log := b.must(200, "GET", fmt.Sprintf("/api/v1/runs/%d/log?from_line=1", id(first)), nil)
			require.Contains(t, log["content"], "hello from ringjob")
			require.Equal(t, float64(1), log["from_line"])
			require.Equal(t, float64(1), log["to_line"])
			require.Equal(t, true, log["end"])
			after := b.must(200, "GET", fmt.Sprintf("/api/v1/runs/%d/log?from_line=2", id(first)), nil)
			require.Equal(t, "", after["content"])

			// Without a key, every trigger is a new run, with the job's params.
			third := b.must(201, "POST", path, nil)
			require.NotEqual(t, first["id"], third["id"])
			require.Equal(t, "job params", third["params"])

			t.Run("list runs", func(t *testing.T) {
				all := b.must(200, "GET", fmt.Sprintf("/api/v1/runs?job_id=%d", id(j)), nil)
				items := all["items"].([]any)
				require.Len(t, items, 2)
				require.Equal(t, third["id"], items[0].(map[string]any)["id"], "newest first")
				for _, it := range items {
					require.Equal(t, "echo-group/say hello", fmt.Sprint(it.(map[string]any)["app_name"], "/", it.(map[string]any)["job_name"]), "every listed run names its job")
				}
				one := b.must(200, "GET", fmt.Sprintf("/api/v1/runs/%d", id(first)), nil)
				require.Equal(t, "say hello", one["job_name"])
				ok := b.must(200, "GET", fmt.Sprintf("/api/v1/runs?job_id=%d&state=succeeded,failed&trigger_type=manual", id(j)), nil)
				require.NotEmpty(t, ok["items"])
				page := b.must(200, "GET", "/api/v1/runs?limit=1", nil)
				require.Len(t, page["items"], 1)
				rest := b.must(200, "GET", "/api/v1/runs?limit=1&cursor="+page["next_cursor"].(string), nil)
				require.Len(t, rest["items"], 1)
				require.Equal(t, first["id"], rest["items"].([]any)[0].(map[string]any)["id"])
				future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
				none := b.must(200, "GET", "/api/v1/runs?from="+future, nil)
				require.Empty(t, none["items"])
			})
			t.Run("kill of a finished run is a conflict", func(t *testing.T) {
				r := b.call("POST", fmt.Sprintf("/api/v1/runs/%d/kill", id(first)), nil)
				require.Equal(t, 409, r.Status)
				code, _, msg := r.errCode(t)
				require.Equal(t, "conflict", code)
				require.Contains(t, msg, "already ended")
				scope := b.must(200, "GET", fmt.Sprintf("/api/v1/runs/%d/kill-scope", id(first)), nil)
				require.Equal(t, false, scope["killable"])
				require.Empty(t, scope["stops"])
				require.Contains(t, scope["summary"], "has already ended")
			})
		})
	}
}

func TestKillRunningLocalCommand(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{})
			gid := b.group("sleep-group", "local://sleep")
			j := b.job(map[string]any{"group_id": gid, "name": "sleeps 30 s"})
			run := b.must(201, "POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", id(j)), nil)
			b.waitRun(id(run), "running", func(r map[string]any) bool { return r["state"] == "running" && r["target"] == "local://sleep" })

			// Asked first: a local process is one run, and the answer changes nothing.
			scope := b.must(200, "GET", fmt.Sprintf("/api/v1/runs/%d/kill-scope", id(run)), nil)
			require.Equal(t, true, scope["killable"])
			require.Equal(t, false, scope["kills_whole_job"], "a local process is killed alone")
			require.Equal(t, "local://sleep", scope["target"])
			require.Len(t, scope["stops"], 1)
			require.Equal(t, id(run), id(scope["stops"].([]any)[0].(map[string]any)))
			require.Equal(t, fmt.Sprintf("The kill stops run %d on local://sleep, and nothing else.", id(run)), scope["summary"])
			require.Equal(t, "running", b.must(200, "GET", fmt.Sprintf("/api/v1/runs/%d", id(run)), nil)["state"])

			start := time.Now()
			// 202 while the process group is still being ended, 200 when it
			// ended before the answer (the local driver reports at once).
			res := b.call("POST", fmt.Sprintf("/api/v1/runs/%d/kill", id(run)), nil)
			require.Contains(t, []int{200, 202}, res.Status, "%s", res.Body)
			killed := res.JSON(t)
			require.Equal(t, id(run), id(killed))
			if res.Status == 200 {
				require.Equal(t, "killed", killed["state"])
			}
			final := b.waitRun(id(run), "killed", func(r map[string]any) bool { return r["state"] != "running" })
			require.Equal(t, "killed", final["state"], "message: %v", final["message"])
			require.Less(t, time.Since(start), 10*time.Second, "the process ended on SIGTERM, long before its 30 s")
			require.NotNil(t, final["finished_at"])
		})
	}
}

func TestNextFiresPreview(t *testing.T) {
	t.Parallel()
	// Two days before the clocks go forward in Berlin (2026-03-29).
	clock := clockwork.NewFakeClockAt(time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC))
	b := setup(t, "sqlite", setupOpts{noSched: true, clock: clock})
	want := []string{
		"2026-03-28T01:30:00Z", // 02:30 CET
		"2026-03-29T01:00:00Z", // 02:30 does not exist that night: the next valid instant, 03:00 CEST
		"2026-03-30T00:30:00Z", // 02:30 CEST
		"2026-03-31T00:30:00Z",
		"2026-04-01T00:30:00Z",
	}
	sched := map[string]any{"schedule_type": "cron", "schedule_conf": "0 30 2 * * ?", "time_zone": "Europe/Berlin"}

	got := b.must(200, "POST", "/api/v1/next-fires", sched)
	require.Equal(t, "Europe/Berlin", got["time_zone"])
	require.Len(t, got["items"], 5)
	for i, w := range want {
		require.Equal(t, w, got["items"].([]any)[i])
		_, err := time.Parse(time.RFC3339, got["local"].([]any)[i].(string))
		require.NoError(t, err)
	}
	require.Equal(t, "2026-03-28T02:30:00+01:00", got["local"].([]any)[0])

	gid := b.group("preview", "local://echo")
	j := b.job(map[string]any{"group_id": gid, "name": "nightly", "schedule_type": "cron", "schedule_conf": "0 30 2 * * ?", "time_zone": "Europe/Berlin"})
	saved := b.must(200, "GET", fmt.Sprintf("/api/v1/jobs/%d/next-fires?n=3", id(j)), nil)
	require.Equal(t, []any{want[0], want[1], want[2]}, saved["items"])
	def := b.must(200, "GET", fmt.Sprintf("/api/v1/jobs/%d/next-fires", id(j)), nil)
	require.Len(t, def["items"], 5)

	none := b.must(200, "POST", "/api/v1/next-fires", map[string]any{"schedule_type": "none"})
	require.Empty(t, none["items"])
	past := b.must(200, "POST", "/api/v1/next-fires", map[string]any{"schedule_type": "at", "schedule_conf": "2020-01-01T00:00:00Z"})
	require.Empty(t, past["items"])
	rate := b.must(200, "POST", "/api/v1/next-fires", map[string]any{"schedule_type": "fixed_rate", "schedule_conf": "90", "n": 2})
	require.Equal(t, []any{"2026-03-27T12:01:30Z", "2026-03-27T12:03:00Z"}, rate["items"])
	require.True(t, strings.HasSuffix(rate["local"].([]any)[0].(string), "Z"), "UTC zone by default")
}
