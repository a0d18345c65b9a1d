package web_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestAdminPagesInBrowser: an admin creates a user and a token for it in
// the console and sees both in the audit log; a user creates a token in
// "my tokens", sees it once, and revokes it; a non-admin gets a readable
// refusal; the sign-in page offers SSO when the server has it configured.
func TestAdminPagesInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test starts a server and chromium; skipped with -short")
	}
	chromium := chromiumPath()
	if chromium == "" {
		t.Skip("SKIPPED: chromium is not installed, so the console's browser test cannot run (apt-get install chromium; CI installs it)")
	}
	// Two alarm channels: webhooks to real receivers on sockets, one that
	// accepts and one that refuses.
	var hookMu sync.Mutex
	var hookBodies []string
	okHook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		hookMu.Lock()
		hookBodies = append(hookBodies, string(raw))
		hookMu.Unlock()
	}))
	defer okHook.Close()
	deadHook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "the pager service is down for maintenance", http.StatusServiceUnavailable)
	}))
	defer deadHook.Close()
	const hookToken = "e2e-hook-token-0123456789abcdef"
	// SSO is configured (the issuer is only asked at a sign-in, which this
	// test does not make).
	srv := startRingjob(t, `auth:
  sso:
    issuer_url: https://sso.example.com/realms/acme
    client_id: ringjob
    client_secret: not-used-here
    redirect_url: http://127.0.0.1/api/v1/sso/callback
alarms:
  channels:
    team-hook:
      type: webhook
      url: `+okHook.URL+`/hook/`+hookToken+`
    pager:
      type: webhook
      url: `+deadHook.URL+`/hook/`+hookToken+`
`)
	admin := srv.call("POST", "users", map[string]any{"name": "ada", "password": "admin-password-1234"})
	srv.call("POST", "role-bindings", map[string]any{"role": "admin", "principal_id": admin["id"]})
	srv.call("POST", "users", map[string]any{"name": "walt", "password": "walt-password-1234"})

	ctx := browser(t, chromium)
	signIn := func(user, password string) chromedp.Tasks {
		return chromedp.Tasks{
			chromedp.Navigate(srv.base + "/#/login"),
			chromedp.WaitVisible("#username", chromedp.ByQuery),
			clearInput("#username"),
			clearInput("#password"),
			chromedp.SendKeys("#username", user, chromedp.ByQuery),
			chromedp.SendKeys("#password", password, chromedp.ByQuery),
			chromedp.Click("#signin", chromedp.ByQuery),
			// Signed in: the console has gone on to its first page.
			chromedp.Poll(`location.hash === "#/" && !document.querySelector("#username") && !!document.querySelector("#signout") && !!document.querySelector("main h1")`, nil),
		}
	}
	// Confirmation dialogs are answered yes.
	autoConfirm := chromedp.Evaluate(`window.confirm = () => true`, nil)

	var ssoHref string
	run(t, ctx, "sign-in offers SSO",
		chromedp.Navigate(srv.base+"/#/login"),
		chromedp.WaitVisible("#sso-login", chromedp.ByQuery),
		chromedp.AttributeValue("#sso-login", "href", &ssoHref, nil, chromedp.ByQuery),
	)
	require.True(t, strings.HasPrefix(ssoHref, "api/v1/sso/login"), ssoHref)

	// The admin creates a user, then a token for it.
	var flashText string
	run(t, ctx, "admin creates a user",
		signIn("ada", "admin-password-1234"),
		chromedp.Navigate(srv.base+"/#/admin/users"),
		chromedp.WaitVisible("#new-user", chromedp.ByQuery),
		chromedp.SendKeys("#nu-name", "uma", chromedp.ByQuery),
		chromedp.SendKeys("#nu-email", "uma@example.com", chromedp.ByQuery),
		chromedp.SendKeys("#nu-password", "uma-password-12345", chromedp.ByQuery),
		chromedp.SetValue("#nu-role", "", chromedp.ByQuery), // a role is granted below, by the bindings page
		chromedp.Click("#new-user-submit", chromedp.ByQuery),
		chromedp.WaitVisible(`//td[text()="uma"]`, chromedp.BySearch),
		chromedp.Text("#flash", &flashText, chromedp.ByQuery),
	)
	require.Contains(t, flashText, "uma")
	users := srv.call("GET", "users", nil)["items"].([]any)
	var umaID any
	for _, u := range users {
		if u.(map[string]any)["name"] == "uma" {
			umaID = u.(map[string]any)["id"]
		}
	}
	require.NotNil(t, umaID, "the user is in the API too")
	var secret, tokenOwner string
	run(t, ctx, "admin creates a token for the user",
		chromedp.Navigate(fmt.Sprintf("%s/#/admin/tokens?principal_id=%v", srv.base, umaID)),
		chromedp.WaitVisible("#new-admin-token", chromedp.ByQuery),
		chromedp.SendKeys("#at-name", "uma-ci", chromedp.ByQuery),
		chromedp.Click("#new-admin-token-submit", chromedp.ByQuery),
		chromedp.WaitVisible("#admin-token-value", chromedp.ByQuery),
		chromedp.Value("#admin-token-value", &secret, chromedp.ByQuery),
		chromedp.WaitVisible(`//td[text()="uma-ci"]`, chromedp.BySearch),
		chromedp.Text(`//tr[td[text()="uma-ci"]]/td[contains(@class,"token-owner")]`, &tokenOwner, chromedp.BySearch),
	)
	require.True(t, strings.HasPrefix(secret, "rj_"), secret)
	require.Equal(t, "uma", strings.TrimSpace(tokenOwner), "the tokens table names the owner, not its id")

	// A role is granted by picking the user and the group by name.
	for i := 0; i < 12; i++ { // more than one page of matches
		srv.call("POST", "service-accounts", map[string]any{"name": fmt.Sprintf("umbrella-%02d", i)})
	}
	srv.call("POST", "groups", map[string]any{"app_name": "picked-group", "title": "Picked"})
	var granted, moreShown string
	run(t, ctx, "grant a role with name pickers",
		chromedp.Navigate(srv.base+"/#/admin/bindings"),
		chromedp.WaitVisible("#new-binding", chromedp.ByQuery),
		chromedp.SetValue("#nb-role", "operator", chromedp.ByQuery),
		chromedp.SendKeys("#nb-principal", "um", chromedp.ByQuery),
		chromedp.WaitVisible(`#nb-principal-results button[data-value]`, chromedp.ByQuery),
		chromedp.Text("#nb-principal-results", &moreShown, chromedp.ByQuery),
		chromedp.Click(`//ul[@id="nb-principal-results"]//button[text()="uma (user)"]`, chromedp.BySearch),
		chromedp.WaitVisible(`//p[@id="nb-principal-chosen"][contains(., "uma (user)")]`, chromedp.BySearch),
		chromedp.SendKeys("#nb-group", "pick", chromedp.ByQuery),
		chromedp.Click(`//ul[@id="nb-group-results"]//button[contains(., "picked-group")]`, chromedp.BySearch),
		chromedp.WaitVisible(`//p[@id="nb-group-chosen"][contains(., "picked-group")]`, chromedp.BySearch),
		chromedp.Click("#new-binding-submit", chromedp.ByQuery),
		chromedp.WaitVisible(`//table[@id="bindings-table"]//td[text()="uma (user)"]`, chromedp.BySearch),
		chromedp.Text("#bindings-table", &granted, chromedp.ByQuery),
	)
	require.Contains(t, moreShown, "More", "the matches page through the API")
	require.Contains(t, granted, "picked-group")
	checkA11y(t, ctx, "role bindings")
	var pickErr string
	run(t, ctx, "a typed name must be picked",
		chromedp.SendKeys("#nb-principal", "nobody-like-this", chromedp.ByQuery),
		chromedp.Click("#new-binding-submit", chromedp.ByQuery),
		chromedp.Poll(`(document.querySelector("#new-binding-error")?.textContent ?? "") !== ""`, nil),
		chromedp.Text("#new-binding-error", &pickErr, chromedp.ByQuery),
	)
	require.Contains(t, pickErr, "pick one of the matches")

	// Both are in the audit log, and the filter narrows it.
	var actions string
	run(t, ctx, "audit log",
		chromedp.Navigate(srv.base+"/#/admin/audit"),
		chromedp.WaitVisible("#audit-table", chromedp.ByQuery),
		chromedp.Text("#audit-table tbody", &actions, chromedp.ByQuery),
		screenshot("audit"),
	)
	require.Contains(t, actions, "user.create")
	require.Contains(t, actions, "token.create")
	require.Contains(t, actions, "user:ada", "the admin's session is the principal")
	run(t, ctx, "audit filter",
		chromedp.SendKeys("#audit-action", "token.", chromedp.ByQuery),
		chromedp.Click("#audit-apply", chromedp.ByQuery),
		chromedp.WaitVisible(`#audit-table tbody tr[data-audit]`, chromedp.ByQuery),
		// The table is drawn again for the filter: wait for the new one.
		chromedp.Poll(`(() => { const b = document.querySelector("#audit-table tbody"); return location.hash.includes("action=token.") && b !== null && b.querySelector("tr[data-audit]") !== null && !b.textContent.includes("user.create"); })()`, nil),
		chromedp.Text("#audit-table tbody", &actions, chromedp.ByQuery),
	)
	require.Contains(t, actions, "token.create")

	// Alarm channels: listed without their tokens; a test alarm reaches the
	// receiver and says "sent"; the refusing one shows its error; both are
	// in the audit log.
	var channels, okResult, deadResult string
	run(t, ctx, "alarm channels",
		chromedp.Navigate(srv.base+"/#/admin/alarms"),
		chromedp.WaitVisible(`#alarm-channels-table tr[data-channel="team-hook"]`, chromedp.ByQuery),
		chromedp.Text("#alarm-channels-table", &channels, chromedp.ByQuery),
		chromedp.Click(`tr[data-channel="team-hook"] button`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-channel="team-hook"] .alarm-result .state.succeeded`, chromedp.ByQuery),
		chromedp.Text(`tr[data-channel="team-hook"] .alarm-result`, &okResult, chromedp.ByQuery),
		chromedp.Click(`tr[data-channel="pager"] button`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-channel="pager"] .alarm-result .state.failed`, chromedp.ByQuery),
		chromedp.Text(`tr[data-channel="pager"] .alarm-result`, &deadResult, chromedp.ByQuery),
		screenshot("alarm-channels"),
	)
	require.Contains(t, channels, "webhook")
	require.Contains(t, channels, okHook.URL, "where it sends: the scheme and host")
	require.NotContains(t, channels, hookToken, "never the token")
	require.Contains(t, okResult, "sent")
	require.Contains(t, deadResult, "HTTP 503")
	require.Contains(t, deadResult, "the pager service is down for maintenance")
	require.NotContains(t, deadResult, hookToken)
	hookMu.Lock()
	require.Len(t, hookBodies, 1, "one test alarm reached the receiver")
	require.Contains(t, hookBodies[0], "TEST alarm")
	require.Contains(t, hookBodies[0], "user:ada", "it names who sent it")
	hookMu.Unlock()
	checkA11y(t, ctx, "alarm channels")
	var overflow bool
	run(t, ctx, "alarm channels at phone width",
		emulation.SetDeviceMetricsOverride(390, 844, 2, true),
		chromedp.Sleep(200*time.Millisecond),
		chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth + 1`, &overflow),
		emulation.ClearDeviceMetricsOverride(),
	)
	require.False(t, overflow, "the alarm channels page fits a phone's width")
	run(t, ctx, "alarm tests in the audit log",
		chromedp.Click(`a[href="#/admin/audit?action=alarm_channel.test"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#audit-table tbody tr[data-audit]`, chromedp.ByQuery),
		chromedp.Text("#audit-table tbody", &actions, chromedp.ByQuery),
	)
	require.Equal(t, 2, strings.Count(actions, "alarm_channel.test"), actions)
	require.Contains(t, actions, "team-hook")
	require.Contains(t, actions, "pager")

	// The job form picks alarm channels from the server's.
	srv.call("POST", "groups", map[string]any{"app_name": "alarmed", "members": []string{"local://ticker"}})
	var picked string
	run(t, ctx, "job form picks alarm channels",
		chromedp.Navigate(srv.base+"/#/jobs/new"),
		chromedp.WaitVisible(`#f-alarm_channels input[value="team-hook"]`, chromedp.ByQuery),
		chromedp.Text("#f-alarm_channels", &picked, chromedp.ByQuery),
		chromedp.SendKeys("#f-name", "alarmed-job", chromedp.ByQuery),
		chromedp.SendKeys("#f-schedule_conf", "0 0 3 * * ?", chromedp.ByQuery),
		chromedp.Click(`#f-alarm_channels input[value="team-hook"]`, chromedp.ByQuery),
		chromedp.Click("#save-job", chromedp.ByQuery),
		chromedp.Poll(`/^#\/jobs\/\d+$/.test(location.hash)`, nil),
		chromedp.WaitVisible("#job-runs", chromedp.ByQuery), // the job page has finished loading
	)
	require.Contains(t, picked, "team-hook (webhook)")
	require.Contains(t, picked, "pager (webhook)")
	jobs := srv.call("GET", "jobs?q=alarmed-job", nil)["items"].([]any)
	require.Len(t, jobs, 1)
	require.Equal(t, []any{"team-hook"}, jobs[0].(map[string]any)["alarm_channels"])

	// A group's executor token: rotated (shown once, with copy), then set by
	// hand; executors are refused with the old token at once.
	const firstToken = "console-first-group-token-0123"
	tg := srv.call("POST", "groups", map[string]any{"app_name": "tokened", "executor_token": firstToken, "accept_registrations": true})
	registers := func(tok, addr string) bool {
		t.Helper()
		code, _ := srv.register("tokened", tok, addr)
		return code == 200
	}
	require.True(t, registers(firstToken, "http://127.0.0.1:9941/"))
	var rotated, tokenState string
	run(t, ctx, "rotate a group's executor token",
		autoConfirm,
		chromedp.Navigate(fmt.Sprintf("%s/#/groups/%v", srv.base, tg["id"])),
		chromedp.WaitVisible("#rotate-executor-token", chromedp.ByQuery),
		chromedp.Click("#rotate-executor-token", chromedp.ByQuery),
		chromedp.WaitVisible("#executor-token-value", chromedp.ByQuery),
		chromedp.WaitVisible("#copy-executor-token", chromedp.ByQuery),
		chromedp.Value("#executor-token-value", &rotated, chromedp.ByQuery),
		chromedp.Text("#group-token-state", &tokenState, chromedp.ByQuery),
		screenshot("group-token"),
	)
	require.True(t, strings.HasPrefix(rotated, "rjg_"), rotated)
	require.Equal(t, "its own", tokenState)
	require.False(t, registers(firstToken, "http://127.0.0.1:9942/"), "the old token is refused at once")
	require.True(t, registers(rotated, "http://127.0.0.1:9942/"))
	checkA11y(t, ctx, "group page")
	run(t, ctx, "group page at phone width",
		emulation.SetDeviceMetricsOverride(390, 844, 2, true),
		chromedp.Sleep(200*time.Millisecond),
		chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth + 1`, &overflow),
		emulation.ClearDeviceMetricsOverride(),
	)
	require.False(t, overflow, "the group page fits a phone's width")

	const chosen = "xxl-executors-token-of-ours-01"
	var setErr, flashMsg string
	run(t, ctx, "set a group's executor token by hand",
		chromedp.Click("#executor-token-done", chromedp.ByQuery),
		chromedp.WaitNotPresent("#executor-token-value", chromedp.ByQuery),
		chromedp.SendKeys("#executor-token-input", "short", chromedp.ByQuery),
		chromedp.Click("#set-executor-token-submit", chromedp.ByQuery),
		chromedp.Poll(`(document.querySelector("#executor-token-error")?.textContent ?? "") !== ""`, nil),
		chromedp.Text("#executor-token-error", &setErr, chromedp.ByQuery),
		clearInput("#executor-token-input"),
		chromedp.SendKeys("#executor-token-input", chosen, chromedp.ByQuery),
		chromedp.Click("#set-executor-token-submit", chromedp.ByQuery),
		// Exactly this step's message: the rotation's ("A new executor token
		// is set: ...") may still be shown while this request is in flight.
		chromedp.Poll(`(document.querySelector("#flash")?.textContent ?? "") === "The executor token is set."`, nil),
		chromedp.Text("#flash", &flashMsg, chromedp.ByQuery),
	)
	require.Contains(t, setErr, "16..255")
	require.False(t, registers(rotated, "http://127.0.0.1:9943/"), "the rotated token is refused once replaced")
	require.True(t, registers(chosen, "http://127.0.0.1:9943/"))

	// Editing the group in its form leaves the token alone.
	run(t, ctx, "edit the group without touching its token",
		chromedp.Navigate(fmt.Sprintf("%s/#/groups/%v/edit", srv.base, tg["id"])),
		chromedp.WaitVisible("#g-title", chromedp.ByQuery),
		chromedp.SendKeys("#g-title", "Tokened team", chromedp.ByQuery),
		chromedp.Click("#save-group", chromedp.ByQuery),
		chromedp.Poll(fmt.Sprintf(`location.hash === "#/groups/%v"`, tg["id"]), nil),
		chromedp.WaitVisible("#group-token-state", chromedp.ByQuery),
		chromedp.Text("#group-token-state", &tokenState, chromedp.ByQuery),
	)
	require.Equal(t, "its own", tokenState)
	require.True(t, registers(chosen, "http://127.0.0.1:9944/"), "the form kept the token")
	audit := srv.call("GET", "audit?action=group.executor_token", nil)["items"].([]any)
	require.Len(t, audit, 2)
	require.Equal(t, "user:ada", audit[0].(map[string]any)["principal"])

	// My tokens: created, shown once with a copy button, revoked.
	var mine, after string
	run(t, ctx, "my tokens",
		chromedp.Navigate(srv.base+"/#/account/tokens"),
		chromedp.WaitVisible("#create-token", chromedp.ByQuery),
		chromedp.SendKeys("#token-name", "ada-laptop", chromedp.ByQuery),
		chromedp.SendKeys("#token-days", "30", chromedp.ByQuery),
		chromedp.Click("#create-token", chromedp.ByQuery),
		chromedp.WaitVisible("#token-value", chromedp.ByQuery),
		chromedp.Value("#token-value", &mine, chromedp.ByQuery),
		chromedp.WaitVisible("#copy-token", chromedp.ByQuery),
		chromedp.Click("#token-done", chromedp.ByQuery),
		chromedp.WaitNotPresent("#token-value", chromedp.ByQuery),
		chromedp.WaitVisible(`//td[text()="ada-laptop"]`, chromedp.BySearch),
		chromedp.Text("#tokens-table", &after, chromedp.ByQuery),
	)
	require.True(t, strings.HasPrefix(mine, "rj_"), mine)
	require.NotContains(t, after, mine, "the secret is shown once, never in the list")
	require.Contains(t, after, mine[:9], "the list shows the prefix")
	run(t, ctx, "revoke my token",
		autoConfirm,
		chromedp.Click(`//tr[td[text()="ada-laptop"]]//button`, chromedp.BySearch),
		chromedp.WaitVisible(`//tr[td[text()="ada-laptop"]]/td[contains(text(), "revoked")]`, chromedp.BySearch),
	)

	// A user without admin sees no Administration link and a readable
	// refusal on the page.
	var refusal, menu string
	run(t, ctx, "non-admin",
		chromedp.Click("#signout", chromedp.ByQuery),
		chromedp.WaitVisible("#username", chromedp.ByQuery),
		signIn("walt", "walt-password-1234"),
		chromedp.Text("#nav-links", &menu, chromedp.ByQuery),
		chromedp.Navigate(srv.base+"/#/admin/audit"),
		chromedp.WaitVisible("#page-error", chromedp.ByQuery),
		chromedp.Text("#page-error", &refusal, chromedp.ByQuery),
	)
	require.NotContains(t, menu, "Administration")
	require.Contains(t, refusal, "admin")
}
