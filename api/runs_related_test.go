package api_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRunRelated finds a run's retry chain and its child runs exactly, from
// real failures and successes of local commands.
func TestRunRelated(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{})
			g := b.group("related", "local://echo", "local://sleep")
			child1 := b.job(map[string]any{"group_id": g, "name": "child-1", "pinned_targets": []string{"local://echo"}})
			child2 := b.job(map[string]any{"group_id": g, "name": "child-2", "pinned_targets": []string{"local://echo"}})
			parent := b.job(map[string]any{"group_id": g, "name": "parent", "pinned_targets": []string{"local://echo"},
				"child_job_ids": []int64{id(child1), id(child2)}})
			// Times out after 1 s, twice retried at once.
			flaky := b.job(map[string]any{"group_id": g, "name": "flaky", "pinned_targets": []string{"local://sleep"}, "timeout_sec": 1,
				"retry_count": 2, "retry_delay_sec": 0})

			related := func(run int64) map[string]any {
				return b.must(200, "GET", fmt.Sprintf("/api/v1/runs/%d/related", run), nil)
			}
			ids := func(list any) []int64 {
				out := []int64{}
				for _, it := range list.([]any) {
					out = append(out, id(it.(map[string]any)))
				}
				return out
			}

			// A parent run's success triggers one run of each child job.
			p := b.must(201, "POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", id(parent)), nil)
			b.waitRun(id(p), "success", func(r map[string]any) bool { return r["state"] == "succeeded" })
			var rel map[string]any
			require.Eventually(t, func() bool { rel = related(id(p)); return len(rel["children"].([]any)) == 2 }, 15*time.Second, 50*time.Millisecond, "two child runs")
			kids := rel["children"].([]any)
			require.ElementsMatch(t, []float64{float64(id(child1)), float64(id(child2))},
				[]float64{kids[0].(map[string]any)["job_id"].(float64), kids[1].(map[string]any)["job_id"].(float64)})
			require.Equal(t, "parent", kids[0].(map[string]any)["trigger_type"])
			require.Equal(t, []int64{id(p)}, ids(rel["retry_chain"]), "never retried: the chain is the run")
			require.Nil(t, rel["parent"])
			// A second parent run has children of its own, not the first's.
			p2 := b.must(201, "POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", id(parent)), nil)
			b.waitRun(id(p2), "success", func(r map[string]any) bool { return r["state"] == "succeeded" })
			require.Eventually(t, func() bool { return len(related(id(p2))["children"].([]any)) == 2 }, 15*time.Second, 50*time.Millisecond)
			require.Empty(t, intersect(ids(related(id(p2))["children"]), ids(rel["children"])))
			// A child run knows its parent.
			up := related(id(kids[0].(map[string]any)))["parent"].(map[string]any)
			require.Equal(t, id(p), id(up))

			// A run that times out is retried twice: every run of the chain
			// shows the whole chain, first to last.
			first := b.must(201, "POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", id(flaky)), nil)
			var chain []int64
			require.Eventually(t, func() bool {
				chain = ids(related(id(first))["retry_chain"])
				return len(chain) == 3
			}, 30*time.Second, 100*time.Millisecond, "two retries")
			require.Equal(t, id(first), chain[0])
			for i, r := range chain {
				got := related(r)
				require.Equal(t, chain, ids(got["retry_chain"]), "from run %d", r)
				run := b.must(200, "GET", fmt.Sprintf("/api/v1/runs/%d", r), nil)
				require.Equal(t, float64(i), run["attempt"])
			}
			require.Empty(t, related(chain[1])["children"])

			require.Equal(t, 404, b.call("GET", "/api/v1/runs/999999/related", nil).Status)
			require.Equal(t, 400, b.call("GET", "/api/v1/runs/x/related", nil).Status)
		})
	}
}

// TestRunRelatedHidesOtherGroups: a viewer of the parent's group sees how
// many child runs are in groups they may not read, not the runs.
func TestRunRelatedHidesOtherGroups(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", setupOpts{})
	ga := b.group("related-a", "local://echo")
	gb := b.group("related-b", "local://echo")
	mine := b.job(map[string]any{"group_id": ga, "name": "child-a"})
	theirs := b.job(map[string]any{"group_id": gb, "name": "child-b"})
	parent := b.job(map[string]any{"group_id": ga, "name": "parent", "child_job_ids": []int64{id(mine), id(theirs)}})
	p := b.must(201, "POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", id(parent)), nil)
	path := fmt.Sprintf("/api/v1/runs/%d/related", id(p))
	require.Eventually(t, func() bool { return len(b.must(200, "GET", path, nil)["children"].([]any)) == 2 }, 15*time.Second, 50*time.Millisecond)

	sa := b.must(201, "POST", "/api/v1/service-accounts", map[string]any{"name": "related-viewer"})
	b.must(201, "POST", "/api/v1/role-bindings", map[string]any{"role": "viewer", "group_id": ga, "principal_id": id(sa)})
	tok := b.must(201, "POST", "/api/v1/tokens", map[string]any{"name": "v", "principal_id": id(sa), "expires_in_sec": 3600})
	r := b.call("GET", path, nil, "Authorization", "Bearer "+tok["token"].(string))
	require.Equal(t, 200, r.Status, "%s", r.Body)
	rel := r.JSON(t)
	kids := rel["children"].([]any)
	require.Len(t, kids, 1)
	require.Equal(t, float64(id(mine)), kids[0].(map[string]any)["job_id"])
	require.Equal(t, 1.0, rel["children_hidden"])
}

func intersect(a, b []int64) []int64 {
	var out []int64
	for _, x := range a {
		for _, y := range b {
			if x == y {
				out = append(out, x)
			}
		}
	}
	return out
}
