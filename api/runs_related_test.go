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
