package api_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/store"
)

// TestOverview covers what the console's dashboard and executors page read:
// job counts, registered executors and scheduler replicas, each limited to
// what the caller may see.
func TestOverview(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			now := time.Now().Truncate(time.Millisecond)
			clock := clockwork.NewFakeClockAt(now)
			b := setup(t, dialect, setupOpts{noSched: true, clock: clock, watch: true})
			ga := b.group("overview-a", "local://echo")
			gb := b.group("overview-b", "local://echo")
			for i, g := range []int64{ga, ga, ga, gb} {
				b.job(map[string]any{"group_id": g, "name": fmt.Sprintf("job-%d", i), "schedule_type": "cron", "schedule_conf": "0 0 3 * * ?", "enabled": i != 1})
			}

			// Executors register (first at -60 s, beating since), a replica beats
			// and takes partition 0.
			reg := func(app, addr string, at time.Time) {
				require.NoError(t, b.st.RegistryUpsert(ctx, store.RegistryUpsertParams{AppName: app, Address: addr, NowMs: at.UnixMilli()}))
			}
			reg("overview-a", "http://10.0.0.1:9999/", now.Add(-60*time.Second))
			reg("overview-a", "http://10.0.0.1:9999/", now.Add(-3*time.Second))
			reg("overview-b", "http://10.0.0.2:9999/", now.Add(-1*time.Second))
			reg("nobody-has-this-app", "http://10.0.0.3:9999/", now)
			require.NoError(t, b.st.LockPartitionsEnsure(ctx, 2))
			require.NoError(t, b.st.NodeHeartbeat(ctx, store.NodeHeartbeatParams{ID: "replica-1", Host: "host-1", NowMs: now.Add(-2 * time.Second).UnixMilli()}))
			tx, err := b.st.ScheduleLock(ctx, store.ScheduleLockParams{Node: "replica-1", Preferred: []int{0}, Max: 1, NowMs: now.Add(-2 * time.Second).UnixMilli()})
			require.NoError(t, err)
			require.NoError(t, tx.Commit())

			// The admin sees everything.
			counts := b.must(200, "GET", "/api/v1/job-counts", nil)
			require.Equal(t, map[string]any{"jobs": 4.0, "enabled": 3.0}, counts)
			require.Equal(t, map[string]any{"jobs": 3.0, "enabled": 2.0}, b.must(200, "GET", fmt.Sprintf("/api/v1/job-counts?group_id=%d", ga), nil))

			execs := b.must(200, "GET", "/api/v1/executors", nil)["items"].([]any)
			require.Len(t, execs, 3)
			first := execs[0].(map[string]any)
			require.Equal(t, "nobody-has-this-app", first["app_name"])
			require.Equal(t, 0.0, first["group_id"])
			a := execs[1].(map[string]any)
			require.Equal(t, float64(ga), a["group_id"])
			require.Equal(t, "http://10.0.0.1:9999/", a["address"])
			require.Equal(t, now.Add(-60*time.Second).UTC().Format(time.RFC3339Nano), a["registered_at"], "registration time survives heartbeats")
			require.Equal(t, now.Add(-3*time.Second).UTC().Format(time.RFC3339Nano), a["heartbeat_at"])
			require.Equal(t, 3000.0, a["heartbeat_age_ms"])

			reps := b.must(200, "GET", "/api/v1/replicas", nil)["items"].([]any)
			require.Len(t, reps, 1)
			rep := reps[0].(map[string]any)
			require.Equal(t, "replica-1", rep["id"])
			require.Equal(t, "host-1", rep["host"])
			require.Equal(t, 2000.0, rep["heartbeat_age_ms"])
			require.Equal(t, []any{0.0}, rep["partitions"])
			require.Nil(t, rep["stopped_at"])

			// A hold older than the window is a past one.
			clock.Advance(11 * time.Second)
			rep = b.must(200, "GET", "/api/v1/replicas", nil)["items"].([]any)[0].(map[string]any)
			require.Equal(t, []any{}, rep["partitions"])

			// A viewer of group A sees group A only, and no replicas.
			sa := b.must(201, "POST", "/api/v1/service-accounts", map[string]any{"name": "overview-viewer"})
			b.must(201, "POST", "/api/v1/role-bindings", map[string]any{"role": "viewer", "group_id": ga, "principal_id": id(sa)})
			tok := b.must(201, "POST", "/api/v1/tokens", map[string]any{"name": "v", "principal_id": id(sa), "expires_in_sec": 3600})
			viewer := func(path string) resp {
				return b.call("GET", path, nil, "Authorization", "Bearer "+tok["token"].(string))
			}
			require.Equal(t, map[string]any{"jobs": 3.0, "enabled": 2.0}, viewer("/api/v1/job-counts").JSON(t))
			vexecs := viewer("/api/v1/executors").JSON(t)["items"].([]any)
			require.Len(t, vexecs, 1)
			require.Equal(t, "overview-a", vexecs[0].(map[string]any)["app_name"])
			require.Equal(t, 403, viewer(fmt.Sprintf("/api/v1/executors?group_id=%d", gb)).Status)
			require.Equal(t, 403, viewer(fmt.Sprintf("/api/v1/job-counts?group_id=%d", gb)).Status)
			require.Equal(t, 403, viewer("/api/v1/replicas").Status)
			require.Equal(t, 400, b.call("GET", "/api/v1/executors?group_id=x", nil).Status)
		})
	}
}

// TestJobSearch covers the jobs list's search box (name, handler or pinned
// target) and its schedule type filter.
func TestJobSearch(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{noSched: true})
			g := b.group("search", "local://echo", "local://sleep")
			b.job(map[string]any{"group_id": g, "name": "nightly-report", "handler": "reportHandler", "schedule_type": "cron", "schedule_conf": "0 0 3 * * ?"})
			b.job(map[string]any{"group_id": g, "name": "cleanup", "handler": "sweepHandler", "schedule_type": "fixed_rate", "schedule_conf": "60",
				"pinned_targets": []string{"local://sleep"}})
			b.job(map[string]any{"group_id": g, "name": "by-hand", "handler": "manual", "schedule_type": "none"})
			names := func(query string) []string {
				var out []string
				for _, it := range b.must(200, "GET", "/api/v1/jobs?"+query, nil)["items"].([]any) {
					out = append(out, it.(map[string]any)["name"].(string))
				}
				return out
			}
			require.Equal(t, []string{"nightly-report"}, names("q=report"), "by name")
			require.Equal(t, []string{"cleanup"}, names("q=sweepH"), "by handler")
			require.Equal(t, []string{"cleanup"}, names("q=sleep"), "by pinned target")
			require.Equal(t, []string{"cleanup"}, names("schedule_type=fixed_rate"))
			require.Equal(t, []string{"nightly-report"}, names("q=Handler&schedule_type=cron"), "filters combine")
			r := b.call("GET", "/api/v1/jobs?schedule_type=hourly", nil)
			require.Equal(t, 400, r.Status)
			_, field, _ := r.errCode(t)
			require.Equal(t, "schedule_type", field)
		})
	}
}

// TestJobsByName pages the jobs list in name order across equal names in
// different groups, with and without a filter.
func TestJobsByName(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{noSched: true})
			ga := b.group("by-name-a", "local://echo")
			gb := b.group("by-name-b", "local://echo")
			for _, j := range []struct {
				g    int64
				name string
			}{{ga, "delta"}, {ga, "alpha"}, {gb, "charlie"}, {gb, "alpha"}, {ga, "bravo"}} {
				b.job(map[string]any{"group_id": j.g, "name": j.name, "schedule_type": "none", "handler": "h-" + j.name})
			}
			walk := func(query string) []string {
				var out []string
				cursor := ""
				for pages := 0; pages < 10; pages++ {
					page := b.must(200, "GET", "/api/v1/jobs?sort=name&limit=2&"+query+"&cursor="+cursor, nil)
					for _, it := range page["items"].([]any) {
						j := it.(map[string]any)
						out = append(out, fmt.Sprintf("%s/%v", j["name"], j["group_id"] == float64(ga)))
					}
					if cursor = page["next_cursor"].(string); cursor == "" {
						return out
					}
				}
				t.Fatal("the listing never ended")
				return nil
			}
			require.Equal(t, []string{"alpha/true", "alpha/false", "bravo/true", "charlie/false", "delta/true"}, walk(""))
			require.Equal(t, []string{"alpha/true", "alpha/false"}, walk("q=h-alpha"))
			require.Equal(t, []string{"alpha/true", "bravo/true", "delta/true"}, walk(fmt.Sprintf("group_id=%d", ga)))
			require.Equal(t, 400, b.call("GET", "/api/v1/jobs?sort=age", nil).Status)
			require.Equal(t, 400, b.call("GET", "/api/v1/jobs?sort=name&cursor=bm9wZQ", nil).Status)
		})
	}
}
