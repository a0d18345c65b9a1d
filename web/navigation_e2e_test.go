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
// answer finally comes. The browser holds the job page's request for its
// job until the runs page is shown, then lets it go, and holds the job
// page's last request (its group's executors, asked after the job came)
// too: once that one is let go and answered, the job page has everything
// it would draw and has either drawn over the runs page or not.
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

	held := make(chan *fetch.EventRequestPaused, 16)
	chromedp.ListenTarget(ctx, func(ev any) {
		if ev, ok := ev.(*fetch.EventRequestPaused); ok {
			held <- ev
		}
	})
	waitHeld := func(what string) *fetch.EventRequestPaused {
		t.Helper()
		select {
		case ev := <-held:
			return ev
		case <-time.After(20 * time.Second):
			t.Fatalf("the browser never asked for %s", what)
			return nil
		}
	}
	let := func(step string, ev *fetch.EventRequestPaused) {
		t.Helper()
		run(t, ctx, step, chromedp.ActionFunc(func(ctx context.Context) error {
			return fetch.ContinueRequest(ev.RequestID).Do(ctx)
		}))
	}
	run(t, ctx, "hold the job page's requests for its job and its group's executors",
		fetch.Enable().WithPatterns([]*fetch.RequestPattern{
			{URLPattern: "*" + jobURL, RequestStage: fetch.RequestStageRequest},
			{URLPattern: fmt.Sprintf("*/api/v1/executors*group_id=%v", group["id"]), RequestStage: fetch.RequestStageRequest},
		}),
		chromedp.Navigate(fmt.Sprintf("%s/#/jobs/%v", srv.base, job["id"])),
	)
	jobReq := waitHeld("the job page's job")
	require.True(t, strings.HasSuffix(jobReq.Request.URL, jobURL), "held %s", jobReq.Request.URL)
	run(t, ctx, "go to the runs page while the job page loads",
		chromedp.Navigate(srv.base+"/#/runs"),
		chromedp.WaitVisible("table#runs", chromedp.ByQuery),
	)
	let("let the job page's job go", jobReq)
	// The job page goes on (the console aborts nothing) to its group's
	// executors: the last thing it waits for before it would draw.
	execReq := waitHeld("the job page's executors")
	require.Contains(t, execReq.Request.URL, "/api/v1/executors")
	let("let the job page's executors go", execReq)
	run(t, ctx, "stop holding", fetch.Disable())

	// The answer is in; give the old page ample time to draw, then look.
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		var h1, title string
		run(t, ctx, "read the page title",
			chromedp.Text("main h1", &h1, chromedp.ByQuery),
			chromedp.Title(&title))
		require.Equal(t, "Runs", strings.TrimSpace(h1), "the job page drew over the runs page after the user left it")
		require.Equal(t, "Runs · Ringjob", title, "the job page retitled the runs page's tab")
		time.Sleep(100 * time.Millisecond)
	}
	var hasRuns bool
	run(t, ctx, "the runs table is still there", chromedp.Evaluate(`!!document.querySelector("table#runs")`, &hasRuns))
	require.True(t, hasRuns)
}
