package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/maintenance/retention"
	"github.com/ringjob/ringjob/store"
)

// TestConsoleAfterRetention: once retention has deleted a job's last run,
// the console still shows how it ended but says the run is purged instead
// of linking to it (job page and jobs list); a retry whose first attempt
// is purged names that run without a link.
func TestConsoleAfterRetention(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test starts a server and chromium; skipped with -short")
	}
	chromium := chromiumPath()
	if chromium == "" {
		t.Skip("SKIPPED: chromium is not installed, so the console's browser test cannot run (apt-get install chromium; CI installs it)")
	}
	srv := startRingjob(t)
	group := srv.call("POST", "groups", map[string]any{"app_name": "purged-e2e", "members": []string{"local://quick", "local://sleeper"}})
	gid := group["id"]
	quick := srv.call("POST", "jobs", map[string]any{"group_id": gid, "name": "quick", "pinned_targets": []string{"local://quick"}})
	// Times out after 1 s and is retried once, 2 s later.
	retried := srv.call("POST", "jobs", map[string]any{"group_id": gid, "name": "retried", "pinned_targets": []string{"local://sleeper"},
		"timeout_sec": 1, "retry_count": 1, "retry_delay_sec": 2})
	user := srv.call("POST", "users", map[string]any{"name": "olga", "password": "owner-password-1234"})
	srv.call("POST", "role-bindings", map[string]any{"role": "owner", "group_id": gid, "principal_id": user["id"]})

	waitFinal := func(path string) map[string]any {
		var r map[string]any
		require.Eventually(t, func() bool {
			r = srv.call("GET", path, nil)
			switch r["state"] {
			case "succeeded", "failed", "timed_out", "killed", "lost", "misfired":
				return true
			}
			return false
		}, 30*time.Second, 200*time.Millisecond, "%s never finished", path)
		return r
	}
	quickRun := srv.call("POST", fmt.Sprintf("jobs/%v/trigger", quick["id"]), nil)
	waitFinal(fmt.Sprintf("runs/%v", quickRun["id"]))
	first := srv.call("POST", fmt.Sprintf("jobs/%v/trigger", retried["id"]), nil)
	first = waitFinal(fmt.Sprintf("runs/%v", first["id"]))
	var retry map[string]any
	require.Eventually(t, func() bool {
		items := srv.call("GET", fmt.Sprintf("runs?job_id=%v", retried["id"]), nil)["items"].([]any)
		for _, it := range items {
			if r := it.(map[string]any); r["retry_of"] == first["id"] {
				retry = r
				return true
			}
		}
		return false
	}, 30*time.Second, 200*time.Millisecond, "the timed-out run was not retried")
	retry = waitFinal(fmt.Sprintf("runs/%v", retry["id"]))

	// Another replica's retention worker, 30 days and a second after the
	// first attempt ended: it and the quick run go, the retry (2 s
	// younger) stays.
	ctx := context.Background()
	st, err := store.OpenMySQL(ctx, srv.dsn)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	ended, err := time.Parse(time.RFC3339, first["finished_at"].(string))
	require.NoError(t, err)
	w, err := retention.New(retention.Options{Config: retention.Config{Runs: retention.Age(30 * 24 * time.Hour)}, Store: st, Node: "other-replica",
		Clock: clockwork.NewFakeClockAt(ended.Add(30*24*time.Hour + time.Second))})
	require.NoError(t, err)
	res, err := w.Cycle(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), res.Runs, "the quick run and the first attempt are past the retention")

	browserCtx := browser(t, chromium)
	var jobPage, noRuns, listCell, attempt string
	run(t, browserCtx, "sign in",
		chromedp.Navigate(srv.base+"/#/login"),
		chromedp.WaitVisible("#username", chromedp.ByQuery),
		chromedp.SendKeys("#username", "olga", chromedp.ByQuery),
		chromedp.SendKeys("#password", "owner-password-1234", chromedp.ByQuery),
		chromedp.Click("#signin", chromedp.ByQuery),
		chromedp.WaitVisible("#tile-jobs", chromedp.ByQuery),
	)
	run(t, browserCtx, "job page of a purged last run",
		chromedp.Navigate(fmt.Sprintf("%s/#/jobs/%v", srv.base, quick["id"])),
		chromedp.WaitVisible("#job-last-run", chromedp.ByQuery),
		chromedp.Text("#job-last-run", &jobPage, chromedp.ByQuery),
		chromedp.Text("#job-runs tbody", &noRuns, chromedp.ByQuery),
	)
	require.Contains(t, jobPage, "succeeded")
	require.Contains(t, jobPage, fmt.Sprintf("run #%v purged by retention", quickRun["id"]))
	require.Contains(t, noRuns, "deleted once older than the retention")
	var links int
	run(t, browserCtx, "no link to the purged run",
		chromedp.Evaluate(fmt.Sprintf(`document.querySelectorAll('a[href="#/runs/%v"]').length`, quickRun["id"]), &links))
	require.Zero(t, links)

	run(t, browserCtx, "job page of a kept last run",
		chromedp.Navigate(fmt.Sprintf("%s/#/jobs/%v", srv.base, retried["id"])),
		chromedp.WaitVisible(fmt.Sprintf(`#job-last-run a[href="#/runs/%v"]`, retry["id"]), chromedp.ByQuery),
	)
	run(t, browserCtx, "jobs list",
		chromedp.Navigate(srv.base+"/#/jobs"),
		chromedp.WaitVisible(fmt.Sprintf(`tr[data-job="%v"] td.last-outcome .last-run-purged`, quick["id"]), chromedp.ByQuery),
		chromedp.Text(fmt.Sprintf(`tr[data-job="%v"] td.last-outcome`, quick["id"]), &listCell, chromedp.ByQuery),
		chromedp.WaitVisible(fmt.Sprintf(`tr[data-job="%v"] td.last-outcome a[href="#/runs/%v"]`, retried["id"], retry["id"]), chromedp.ByQuery),
	)
	require.Contains(t, listCell, "succeeded")
	require.Contains(t, listCell, "purged by retention")

	run(t, browserCtx, "a retry of a purged run",
		chromedp.Navigate(fmt.Sprintf("%s/#/runs/%v", srv.base, retry["id"])),
		chromedp.Poll(`(() => { const t = document.querySelector("#run-attempt"); return t && t.textContent.includes("purged") && t.textContent; })()`, &attempt),
	)
	require.Equal(t, fmt.Sprintf("retry 1 of run #%v (purged by retention)", first["id"]), strings.TrimSpace(attempt))
}
