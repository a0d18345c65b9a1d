package web_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestChildPickerAndTargetTiles: the job form picks child jobs by name
// (group/name), removes them, refuses a name that names no job, and saves
// the picks; the job page names them. The dashboard counts Lambda functions
// and local commands in separate tiles.
func TestChildPickerAndTargetTiles(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test starts a server and chromium; skipped with -short")
	}
	chromium := chromiumPath()
	if chromium == "" {
		t.Skip("SKIPPED: chromium is not installed, so the console's browser test cannot run (apt-get install chromium; CI installs it)")
	}
	srv := startRingjob(t)
	billing := srv.call("POST", "groups", map[string]any{"app_name": "billing",
		"members": []string{"local://quick", "lambda://eu-west-1/invoice"}})
	reports := srv.call("POST", "groups", map[string]any{"app_name": "reports", "members": []string{"local://quick", "local://ticker"}})
	daily := srv.call("POST", "jobs", map[string]any{"group_id": reports["id"], "name": "daily"})
	weekly := srv.call("POST", "jobs", map[string]any{"group_id": reports["id"], "name": "weekly"})
	closeDay := srv.call("POST", "jobs", map[string]any{"group_id": billing["id"], "name": "close-day", "child_job_ids": []any{daily["id"]}})
	admin := srv.call("POST", "users", map[string]any{"name": "ada", "password": "ada-password-123456"})
	srv.call("POST", "role-bindings", map[string]any{"role": "admin", "principal_id": admin["id"]})

	ctx := browser(t, chromium)
	var functions, commands string
	run(t, ctx, "sign in to the dashboard",
		chromedp.Navigate(srv.base+"/#/login"),
		chromedp.WaitVisible("#username", chromedp.ByQuery),
		chromedp.SendKeys("#username", "ada", chromedp.ByQuery),
		chromedp.SendKeys("#password", "ada-password-123456", chromedp.ByQuery),
		chromedp.Click("#signin", chromedp.ByQuery),
		chromedp.WaitVisible("#tile-commands", chromedp.ByQuery),
		chromedp.Text("#tile-functions", &functions, chromedp.ByQuery),
		chromedp.Text("#tile-commands", &commands, chromedp.ByQuery),
	)
	require.Regexp(t, `^Lambda functions\s*1\s*in 1 group$`, functions)
	require.Regexp(t, `^Local commands\s*2\s*in 2 groups$`, commands, "distinct commands, not one per group")
	checkA11y(t, ctx, "dashboard tiles")

	var chosen []string
	var pickErr string
	run(t, ctx, "the form shows the children by name",
		chromedp.Navigate(fmt.Sprintf("%s/#/jobs/%v/edit", srv.base, closeDay["id"])),
		chromedp.WaitVisible("#child-pick", chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll("#child-jobs-chosen li")].map(li => li.firstChild.textContent)`, &chosen),
	)
	require.Equal(t, []string{"reports/daily"}, chosen)
	var suggested []string
	run(t, ctx, "the suggestions are the jobs by name, the job itself left out",
		chromedp.Evaluate(`[...document.querySelectorAll("#child-job-names option")].map(o => o.value)`, &suggested))
	require.Equal(t, []string{"reports/daily", "reports/weekly"}, suggested)
	run(t, ctx, "add by name, remove, refuse an unknown name",
		chromedp.SendKeys("#child-pick", "reports/weekly", chromedp.ByQuery),
		chromedp.Click("#child-add", chromedp.ByQuery),
		chromedp.Poll(`document.querySelectorAll("#child-jobs-chosen li button").length === 2`, nil),
		chromedp.Click(`#child-jobs-chosen button[aria-label="Remove child job reports/daily"]`, chromedp.ByQuery),
		chromedp.SendKeys("#child-pick", "reports/nope", chromedp.ByQuery),
		chromedp.Click("#child-add", chromedp.ByQuery),
		chromedp.Poll(`(() => { const t = (document.querySelector("#f-child_job_ids-error")?.textContent ?? ""); return t !== "" && t; })()`, &pickErr),
		chromedp.Evaluate(`[...document.querySelectorAll("#child-jobs-chosen li")].map(li => li.firstChild.textContent)`, &chosen),
		chromedp.Evaluate(`document.activeElement.blur()`, nil), // no suggestion list open in the picture
		chromedp.ScrollIntoView("#f-child_job_ids", chromedp.ByQuery),
		screenshot("job-form-children"),
	)
	require.Equal(t, "No job is named “reports/nope”: name it as group/name.", pickErr)
	require.Equal(t, []string{"reports/weekly"}, chosen)
	checkA11y(t, ctx, "job form with children")

	var children string
	run(t, ctx, "save; the job page names the child",
		chromedp.Click("#save-job", chromedp.ByQuery),
		chromedp.WaitVisible("#job-children a", chromedp.ByQuery),
		chromedp.Text("#job-children", &children, chromedp.ByQuery),
	)
	require.Equal(t, "reports/weekly", children)
	saved := srv.call("GET", fmt.Sprintf("jobs/%v", closeDay["id"]), nil)
	require.Equal(t, []any{weekly["id"]}, saved["child_job_ids"])
	require.Equal(t, []any{"reports/weekly"}, saved["child_jobs"])
}
