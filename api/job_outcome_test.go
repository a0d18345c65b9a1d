package api_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestJobsByLastOutcome filters the jobs list by each job's last final
// outcome, recorded by real runs of local commands.
func TestJobsByLastOutcome(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{})
			g := b.group("outcomes", "local://echo", "local://sleep")
			ok := b.job(map[string]any{"group_id": g, "name": "echoes", "pinned_targets": []string{"local://echo"}})
			killed := b.job(map[string]any{"group_id": g, "name": "sleeps", "pinned_targets": []string{"local://sleep"}})
			never := b.job(map[string]any{"group_id": g, "name": "idle", "pinned_targets": []string{"local://echo"}})
			require.Equal(t, "", ok["last_outcome"])
			require.Nil(t, ok["last_finished_at"])

			run := b.must(201, "POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", id(ok)), nil)
			b.waitRun(id(run), "success", func(r map[string]any) bool { return r["state"] == "succeeded" })
			run = b.must(201, "POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", id(killed)), nil)
			b.waitRun(id(run), "running", func(r map[string]any) bool { return r["state"] == "running" })
			require.Contains(t, []int{200, 202}, b.call("POST", fmt.Sprintf("/api/v1/runs/%d/kill", id(run)), nil).Status)
			b.waitRun(id(run), "killed", func(r map[string]any) bool { return r["state"] == "killed" })

			got := b.must(200, "GET", fmt.Sprintf("/api/v1/jobs/%d", id(ok)), nil)
			require.Equal(t, "succeeded", got["last_outcome"])
			require.NotNil(t, got["last_finished_at"])
			// GET output goes back through PUT unchanged (read-only fields accepted).
			b.must(200, "PUT", fmt.Sprintf("/api/v1/jobs/%d", id(ok)), got)

			names := func(query string) []string {
				out := []string{}
				for _, it := range b.must(200, "GET", "/api/v1/jobs?"+query, nil)["items"].([]any) {
					out = append(out, it.(map[string]any)["name"].(string))
				}
				return out
			}
			require.Equal(t, []string{"echoes"}, names("last_outcome=succeeded"))
			require.Equal(t, []string{"sleeps"}, names("last_outcome=killed&sort=name"))
			require.Equal(t, []string{"idle"}, names("last_outcome=never"))
			require.Equal(t, []string{}, names("last_outcome=failed"))
			require.Equal(t, []string{"echoes"}, names("last_outcome=succeeded&q=echo"), "combines with the search box")
			require.Equal(t, []string{}, names(fmt.Sprintf("last_outcome=succeeded&group_id=%d&q=sleep", g)))
			require.Equal(t, "", b.must(200, "GET", fmt.Sprintf("/api/v1/jobs/%d", id(never)), nil)["last_outcome"])

			r := b.call("GET", "/api/v1/jobs?last_outcome=running", nil)
			require.Equal(t, 400, r.Status)
			_, field, msg := r.errCode(t)
			require.Equal(t, "last_outcome", field)
			require.Contains(t, msg, "never")
		})
	}
}
