package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestFirstStartAndNamesInBrowser walks a fresh server from its first
// start: the header offers to sign in, the command the server logged makes
// the first admin user through the API, and that user signs in. Then the
// admin work of the console: a new user with a role, a rename and a new
// password, the audit log as a readable diff, the runs filtered by picking
// a group then a job by name, the job page with every setting, and the
// compact menu at phone width.
func TestFirstStartAndNamesInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test starts a server and chromium; skipped with -short")
	}
	chromium := chromiumPath()
	if chromium == "" {
		t.Skip("SKIPPED: chromium is not installed, so the console's browser test cannot run (apt-get install chromium; CI installs it)")
	}
	srv := startRingjobWith(t, true)

	// The server logged the first sign-in command with the token it generated.
	var command string
	require.Eventually(t, func() bool {
		for _, line := range strings.Split(srv.output(), "\n") {
			var l map[string]any
			if json.Unmarshal([]byte(line), &l) == nil && l["command"] != nil {
				command, _ = l["command"].(string)
			}
			if tok, ok := l["admin_token"].(string); ok {
				srv.token = tok
			}
		}
		return command != "" && srv.token != ""
	}, 10*time.Second, 50*time.Millisecond, "no first sign-in command logged:\n%s", srv.output())
	m := regexp.MustCompile(`^(RINGJOB_URL=\S+) (RINGJOB_TOKEN=\S+) ringjob (admin create-user admin --role admin)$`).FindStringSubmatch(command)
	require.NotNil(t, m, "a command to run as it is: %q", command)
	require.Equal(t, "RINGJOB_TOKEN="+srv.token, m[2], "with the generated token")

	ctx := browser(t, chromium)
	var signInShown, signOutShown bool
	run(t, ctx, "signed out, the header offers to sign in",
		chromedp.Navigate(srv.base+"/#/jobs"),
		chromedp.WaitVisible("#username", chromedp.ByQuery),
		chromedp.Navigate(srv.base+"/#/runs"), // any page while signed out goes to the sign-in
		chromedp.WaitVisible("#username", chromedp.ByQuery),
		chromedp.Evaluate(`(() => { const a = document.querySelector("#signin-link"); return !!a && a.offsetParent !== null || location.hash === "#/login"; })()`, &signInShown),
		chromedp.Evaluate(`document.querySelector("#signout").offsetParent !== null`, &signOutShown),
		screenshot("first-start-sign-in"),
	)
	require.True(t, signInShown)
	require.False(t, signOutShown, "no Sign out while signed out")

	// Run the logged command, as a person would (the binary stands for
	// `ringjob`): it prints the password once.
	cmd := exec.Command(srv.bin, strings.Fields(m[3])...)
	cmd.Env = []string{m[1], m[2], "HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), "%s %s", out.String(), errb.String())
	pw := regexp.MustCompile(`(?m)^\s{4}(\S+)\s*$`).FindStringSubmatch(out.String())
	require.NotNil(t, pw, out.String())
	require.Contains(t, out.String(), "Sign in to the console at "+srv.base+"/")

	var who string
	run(t, ctx, "the first admin signs in",
		chromedp.Navigate(srv.base+"/#/login"),
		chromedp.WaitVisible("#username", chromedp.ByQuery),
		chromedp.SendKeys("#username", "admin", chromedp.ByQuery),
		chromedp.SendKeys("#password", pw[1], chromedp.ByQuery),
		chromedp.Click("#signin", chromedp.ByQuery),
		chromedp.WaitVisible("#tile-jobs", chromedp.ByQuery),
		chromedp.Text("#who", &who, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("#signin-link").offsetParent !== null`, &signInShown),
	)
	require.Equal(t, "Signed in as admin (admin)", who)
	require.False(t, signInShown, "signed in, no Sign in link")

	// Two groups, jobs by name, runs of each.
	g1 := srv.call("POST", "groups", map[string]any{"app_name": "billing", "members": []string{"local://quick"}})
	g2 := srv.call("POST", "groups", map[string]any{"app_name": "reports", "members": []string{"local://quick"}})
	alpha := srv.call("POST", "jobs", map[string]any{"group_id": g1["id"], "name": "alpha", "params": "p=1",
		"block_strategy": "DISCARD_LATER", "misfire_policy": "fire_once_now", "retry_count": 3, "retry_backoff": "exponential",
		"retry_delay_sec": 5, "retry_max_delay_sec": 60, "schedule_type": "cron", "schedule_conf": "0 0 3 * * ?"})
	beta := srv.call("POST", "jobs", map[string]any{"group_id": g1["id"], "name": "beta", "child_job_ids": []any{alpha["id"]}})
	srv.call("POST", "jobs", map[string]any{"group_id": g2["id"], "name": "weekly"})
	for _, j := range []map[string]any{alpha, beta, beta} {
		srv.call("POST", fmt.Sprintf("jobs/%v/trigger", j["id"]), map[string]any{})
	}

	// The runs list names jobs; the filter picks a group, then a job by name.
	var jobCells []string
	run(t, ctx, "runs filtered by job name",
		chromedp.Navigate(srv.base+"/#/runs"),
		chromedp.WaitVisible("tr[data-run]", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("#runs-job").disabled`, &signOutShown),
	)
	require.True(t, signOutShown, "no job to pick before a group")
	var options []string
	run(t, ctx, "pick group then job",
		chromedp.SetValue("#runs-group", fmt.Sprint(g1["id"]), chromedp.ByQuery), // fires change
		chromedp.Poll(`(() => { const o = [...document.querySelectorAll("#runs-job option")].map(o => o.textContent); return o.length === 3 && o; })()`, &options),
		chromedp.SetValue("#runs-job", fmt.Sprint(beta["id"]), chromedp.ByQuery),
		chromedp.Click("#runs-filter", chromedp.ByQuery),
		chromedp.Poll(`location.hash.includes("job_id=`+fmt.Sprint(beta["id"])+`") && document.querySelectorAll("tr[data-run]").length === 2`, nil),
		chromedp.Evaluate(`[...document.querySelectorAll("tr[data-run] td:nth-child(2)")].map(td => td.textContent)`, &jobCells),
		screenshot("runs-filter-by-job"),
	)
	require.Equal(t, []string{"All jobs of the group", "alpha", "beta"}, options, "the group's jobs, by name")
	require.Equal(t, []string{"billing/beta", "billing/beta"}, jobCells, "only beta's runs, named")
	var pickedJob string
	run(t, ctx, "the filter shows what it picked",
		chromedp.Evaluate(`document.querySelector("#runs-job").selectedOptions[0].textContent`, &pickedJob))
	require.Equal(t, "beta", pickedJob)
	checkA11y(t, ctx, "runs filter")

	var runJob string
	run(t, ctx, "the run page names its job",
		chromedp.Click(`tr[data-run] a`, chromedp.ByQuery),
		// The run page re-renders its details as it polls: read them in one go.
		chromedp.Poll(`(() => { const d = document.querySelector("#run-job"); return d && d.textContent; })()`, &runJob),
	)
	require.Equal(t, "billing/beta", runJob)

	// The job page shows every setting, children by name.
	var params, block, misfire, retries, children string
	run(t, ctx, "job page",
		chromedp.Navigate(fmt.Sprintf("%s/#/jobs/%v", srv.base, beta["id"])),
		chromedp.WaitVisible("#job-children a", chromedp.ByQuery),
		chromedp.Text("#job-children", &children, chromedp.ByQuery),
		chromedp.Navigate(fmt.Sprintf("%s/#/jobs/%v", srv.base, alpha["id"])),
		chromedp.Poll(`(document.querySelector("main h1")?.textContent ?? "") === "alpha" && !!document.querySelector("#job-params")`, nil),
		chromedp.Text("#job-params", &params, chromedp.ByQuery),
		chromedp.Text("#job-block", &block, chromedp.ByQuery),
		chromedp.Text("#job-misfire", &misfire, chromedp.ByQuery),
		chromedp.Text("#job-retries", &retries, chromedp.ByQuery),
		screenshot("job-page"),
	)
	require.Equal(t, "billing/alpha", children)
	require.Equal(t, "p=1", params)
	require.Contains(t, block, "DISCARD_LATER")
	require.Contains(t, misfire, "fire_once_now")
	require.Equal(t, "3, exponential: 5 s, doubling up to 60 s", retries)

	// A new user gets a role with the form; a group role needs its group.
	var formErr string
	run(t, ctx, "a group role without a group creates nothing",
		chromedp.Navigate(srv.base+"/#/admin/users"),
		chromedp.WaitVisible("#new-user", chromedp.ByQuery),
		chromedp.SendKeys("#nu-name", "vera", chromedp.ByQuery),
		chromedp.SendKeys("#nu-password", "vera-password-12345", chromedp.ByQuery),
		chromedp.SetValue("#nu-role", "operator", chromedp.ByQuery),
		chromedp.Click("#new-user-submit", chromedp.ByQuery),
		chromedp.Poll(`(() => { const t = (document.querySelector("#new-user-error")?.textContent ?? ""); return t !== "" && t; })()`, &formErr),
	)
	require.Contains(t, formErr, "Group of the role")
	require.NotContains(t, fmt.Sprint(srv.call("GET", "users", nil)["items"]), "vera", "nothing was created")
	run(t, ctx, "new user with a role on a group",
		chromedp.SendKeys("#nu-group", "bil", chromedp.ByQuery),
		chromedp.WaitVisible(`#nu-group-results button[data-value]`, chromedp.ByQuery),
		chromedp.Click(`#nu-group-results button[data-value]`, chromedp.ByQuery),
		screenshot("new-user-role"),
		chromedp.Click("#new-user-submit", chromedp.ByQuery),
		chromedp.WaitVisible(`//td[text()="vera"]`, chromedp.BySearch),
	)
	checkA11y(t, ctx, "users")
	var veraID any
	for _, b := range srv.call("GET", "role-bindings", nil)["items"].([]any) {
		b := b.(map[string]any)
		if b["principal_name"] == "vera" {
			require.Equal(t, "operator", b["role"])
			require.Equal(t, g1["id"], b["group_id"])
			veraID = b["principal_id"]
		}
	}
	require.NotNil(t, veraID, "vera holds operator on billing")

	// An admin renames a user and sets a new password.
	run(t, ctx, "rename and reset password",
		chromedp.Click(`button[data-edit="vera"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#ep-name", chromedp.ByQuery),
		clearInput("#ep-name"),
		chromedp.SendKeys("#ep-name", "veronica", chromedp.ByQuery),
		chromedp.SendKeys("#ep-password", "veronica-new-password-1", chromedp.ByQuery),
		chromedp.Click("#edit-principal-submit", chromedp.ByQuery),
		chromedp.WaitVisible(`//td[text()="veronica"]`, chromedp.BySearch),
	)
	body, _ := json.Marshal(map[string]any{"username": "veronica", "password": "veronica-new-password-1"})
	resp, err := http.Post(srv.base+"/api/v1/session", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 201, resp.StatusCode, "the new name and password sign in")

	// The audit log shows a change as before -> after, and a create as
	// the fields it set, without the defaults it left empty.
	srv.call("PATCH", fmt.Sprintf("jobs/%v", alpha["id"]), map[string]any{"description": "closes the books", "retry_count": 4})
	var before, after string
	var height float64
	var createFields []string
	run(t, ctx, "audit diff",
		chromedp.Navigate(srv.base+"/#/admin/audit?action=job.update"),
		chromedp.WaitVisible(`tr[data-audit] li[data-field="retry_count"]`, chromedp.ByQuery),
		chromedp.Text(`tr[data-audit] li[data-field="retry_count"] del`, &before, chromedp.ByQuery),
		chromedp.Text(`tr[data-audit] li[data-field="retry_count"] ins`, &after, chromedp.ByQuery),
		screenshot("audit"),
		chromedp.Navigate(srv.base+"/#/admin/audit?action=job.create"),
		chromedp.WaitVisible(`tr[data-audit] li[data-field="name"]`, chromedp.ByQuery),
		chromedp.Evaluate(`document.documentElement.scrollHeight`, &height),
		chromedp.Evaluate(`[...document.querySelectorAll("tr[data-audit]")].pop().querySelectorAll("li").length > 0 &&
			[...[...document.querySelectorAll("tr[data-audit]")].pop().querySelectorAll("li")].map(li => li.dataset.field)`, &createFields),
	)
	require.Equal(t, "3", before)
	require.Equal(t, "4", after)
	require.NotContains(t, createFields, "timeout_sec", "a default the create left empty is not listed: %v", createFields)
	require.Contains(t, createFields, "block_strategy")
	require.Less(t, height, 3000.0, "three creates fit a screen or two")
	var overflow bool
	run(t, ctx, "audit fits the width",
		chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth + 1`, &overflow))
	require.False(t, overflow, "the audit log is not clipped at the right edge")
	checkA11y(t, ctx, "audit log")

	// At phone width the menu is one button; it opens to the links.
	var navShown, linksShown bool
	var headerHeight float64
	run(t, ctx, "phone menu",
		emulation.SetDeviceMetricsOverride(390, 844, 2, true),
		chromedp.Navigate(srv.base+"/#/jobs"),
		chromedp.WaitVisible("#menu-toggle", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("#nav").offsetParent !== null`, &navShown),
		chromedp.Evaluate(`document.querySelector("header.top").getBoundingClientRect().height`, &headerHeight),
		screenshot("menu-phone-closed"),
		chromedp.Click("#menu-toggle", chromedp.ByQuery),
		chromedp.WaitVisible(`#nav-links a[href="#/runs"]`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("#nav-links a[href='#/runs']").offsetParent !== null`, &linksShown),
		screenshot("menu-phone-open"),
		chromedp.Click(`#nav-links a[href="#/runs"]`, chromedp.ByQuery),
		chromedp.WaitVisible("tr[data-run]", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("#nav").offsetParent !== null`, &navShown),
		emulation.ClearDeviceMetricsOverride(),
	)
	require.Less(t, headerHeight, 60.0, "one header line at phone width")
	require.True(t, linksShown)
	require.False(t, navShown, "the menu closes when a page is picked")
}
