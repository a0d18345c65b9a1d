package api_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/maintenance/retention"
)

// TestJobLastRunPurgedByRetention: a job whose last run retention has
// deleted still reads as before (its last outcome, when it finished, the
// outcome filter), says the run is purged instead of pointing at it, and
// goes back through PUT; the run itself answers 404 saying why.
func TestJobLastRunPurgedByRetention(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{})
			g := b.group("purged", "local://echo")
			j := b.job(map[string]any{"group_id": g, "name": "echoes", "pinned_targets": []string{"local://echo"}})
			require.Equal(t, float64(0), j["last_run_id"])
			require.Equal(t, false, j["last_run_purged"])

			run := b.must(201, "POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", id(j)), nil)
			b.waitRun(id(run), "success", func(r map[string]any) bool { return r["state"] == "succeeded" })
			jobURL := fmt.Sprintf("/api/v1/jobs/%d", id(j))
			got := b.must(200, "GET", jobURL, nil)
			require.Equal(t, float64(id(run)), got["last_run_id"])
			require.Equal(t, false, got["last_run_purged"])

			// 31 days later the retention worker (30 days) deletes the run.
			w, err := retention.New(retention.Options{Config: retention.Config{Runs: retention.Age(30 * 24 * time.Hour)}, Store: b.st, Node: "n1",
				Clock: clockwork.NewFakeClockAt(time.Now().Add(31 * 24 * time.Hour))})
			require.NoError(t, err)
			res, err := w.Cycle(context.Background())
			require.NoError(t, err)
			require.Equal(t, int64(1), res.Runs)

			got = b.must(200, "GET", jobURL, nil)
			require.Equal(t, "succeeded", got["last_outcome"], "the job row keeps how its last run ended")
			require.NotNil(t, got["last_finished_at"])
			require.Equal(t, float64(id(run)), got["last_run_id"])
			require.Equal(t, true, got["last_run_purged"])
			items := b.must(200, "GET", fmt.Sprintf("/api/v1/jobs?group_id=%d&last_outcome=succeeded", g), nil)["items"].([]any)
			require.Len(t, items, 1, "the outcome filter still finds the job")
			require.Equal(t, true, items[0].(map[string]any)["last_run_purged"])
			b.must(200, "PUT", jobURL, got) // read-only fields accepted

			r := b.call("GET", fmt.Sprintf("/api/v1/runs/%d", id(run)), nil)
			require.Equal(t, 404, r.Status)
			_, _, msg := r.errCode(t)
			require.Contains(t, msg, "retention")
			require.Empty(t, b.must(200, "GET", fmt.Sprintf("/api/v1/runs?job_id=%d", id(j)), nil)["items"])
		})
	}
}
