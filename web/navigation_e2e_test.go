package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestLeftPageDoesNotDrawOverTheNext: a page whose data is still loading
// when the user goes to another page must not replace that page when its
// answer finally comes. The browser holds a job page's request for its job
// until the runs page is shown, then lets it go.
func TestLeftPageDoesNotDrawOverTheNext(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test starts a server and chromium; skipped with -short")
	}
	chromium := chromiumPath()
	if chromium == "" {
		t.Skip("SKIPPED: chromium is not installed, so the console's browser test cannot run (apt-get install chromium; CI installs it)")
	}
	srv := startRingjob(t)
	admin := srv.call("POST", "users", map[string]any{"name": "nora", "password": "nora-password-1234"})
	srv.call("POST", "role-bindings", map[string]any{"role": "admin", "principal_id": admin["id"]})
	group := srv.call("POST", "groups", map[string]any{"app_name": "nav-e2e", "title": "Navigation", "members": []string{"local://quick"}})
	job := srv.call("POST", "jobs", map[string]any{"group_id": group["id"], "name": "nav-job", "pinned_targets": []string{"local://quick"}})
	jobURL := fmt.Sprintf("/api/v1/jobs/%v", job["id"])

	ctx := browser(t, chromium)
	run(t, ctx, "sign in",
		chromedp.Navigate(srv.base+"/#/login"),
		chromedp.WaitVisible("#username", chromedp.ByQuery),
		chromedp.SendKeys("#username", "nora", chromedp.ByQuery),
		chromedp.SendKeys("#password", "nora-password-1234", chromedp.ByQuery),
		chromedp.Click("#signin", chromedp.ByQuery),
		chromedp.WaitVisible("#tile-jobs", chromedp.ByQuery),
	)

	held := make(chan fetch.RequestID, 16)
	chromedp.ListenTarget(ctx, func(ev any) {
		if ev, ok := ev.(*fetch.EventRequestPaused); ok {
			held <- ev.RequestID
		}
	})
	run(t, ctx, "hold the job page's request for its job",
		fetch.Enable().WithPatterns([]*fetch.RequestPattern{{URLPattern: "*" + jobURL, RequestStage: fetch.RequestStageRequest}}),
		chromedp.Navigate(fmt.Sprintf("%s/#/jobs/%v", srv.base, job["id"])),
	)
	var id fetch.RequestID
	select {
	case id = <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("the job page never asked for its job")
	}
	run(t, ctx, "go to the runs page while the jobs list loads",
		chromedp.Navigate(srv.base+"/#/runs"),
		chromedp.WaitVisible("table#runs", chromedp.ByQuery),
	)
	// The console aborts the old page's request when it leaves it; letting
	// it go may then fail, which is fine: either way no answer may draw.
	// (Without the guard the job page replaced the runs page here.)
	_ = chromedp.Run(ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		return fetch.ContinueRequest(id).Do(ctx)
	}))
	run(t, ctx, "stop holding", fetch.Disable())

	// Give a late answer time to arrive and draw, then look.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		var h1 string
		run(t, ctx, "read the page title", chromedp.Text("main h1", &h1, chromedp.ByQuery))
		require.Equal(t, "Runs", strings.TrimSpace(h1), "the job page drew over the runs page after the user left it")
		time.Sleep(100 * time.Millisecond)
	}
	var hasRuns bool
	run(t, ctx, "the runs table is still there", chromedp.Evaluate(`!!document.querySelector("table#runs")`, &hasRuns))
	require.True(t, hasRuns)
}
