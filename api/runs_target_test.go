package api_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunsByTarget pages runs filtered by target through windows of the
// runs table (two runs per window here), also with a job filter. Runs of a
// job that are sent one after the other wait for each other's end
// (SERIAL_EXECUTION): the sleepers have jobs of their own.
func TestRunsByTarget(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{runScan: 2})
			g := b.group("by-target", "local://echo", "local://sleep")
			ja := b.job(map[string]any{"group_id": g, "name": "a"})
			jb := b.job(map[string]any{"group_id": g, "name": "b"})
			// Sleepers of their own: a job's runs queue behind its running one.
			jc := b.job(map[string]any{"group_id": g, "name": "c"})
			jd := b.job(map[string]any{"group_id": g, "name": "d"})
			trigger := func(j map[string]any, target string) int64 {
				run := b.must(201, "POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", id(j)), map[string]any{"target": target})
				b.waitRun(id(run), "sent to "+target, func(r map[string]any) bool { return r["target"] == target })
				return id(run)
			}
			var echoes, echoesOfA []int64
			for i, j := range []map[string]any{ja, jb, ja, jb, ja} {
				if i == 1 {
					trigger(jc, "local://sleep")
				}
				r := trigger(j, "local://echo")
				echoes = append([]int64{r}, echoes...) // newest first
				if id(j) == id(ja) {
					echoesOfA = append([]int64{r}, echoesOfA...)
				}
			}
			trigger(jd, "local://sleep")

			all := func(query string) (ids []int64, pages int) {
				cursor := ""
				for {
					page := b.must(200, "GET", "/api/v1/runs?"+query+"&limit=2&cursor="+url.QueryEscape(cursor), nil)
					pages++
					for _, it := range page["items"].([]any) {
						r := it.(map[string]any)
						require.True(t, strings.HasPrefix(r["target"].(string), "local://echo"), "only the target's runs: %v", r)
						ids = append(ids, id(r))
					}
					next, _ := page["next_cursor"].(string)
					if next == "" {
						return ids, pages
					}
					require.Less(t, pages, 20, "the listing ends")
					cursor = next
				}
			}
			got, pages := all("target=local://echo")
			require.Equal(t, echoes, got, "every run sent to the target, newest first")
			require.GreaterOrEqual(t, pages, 4, "7 runs in windows of 2 runs")
			got, _ = all("target=" + url.QueryEscape("local://echo/"))
			require.Equal(t, echoes, got, "a trailing / does not matter")
			got, _ = all(fmt.Sprintf("target=local://echo&job_id=%d", id(ja)))
			require.Equal(t, echoesOfA, got, "combined with a job")
			got, _ = all("target=local://nowhere")
			require.Empty(t, got)

			r := b.call("GET", "/api/v1/runs?target="+strings.Repeat("x", 513), nil)
			require.Equal(t, 400, r.Status)
			_, field, _ := r.errCode(t)
			require.Equal(t, "target", field)
		})
	}
}
