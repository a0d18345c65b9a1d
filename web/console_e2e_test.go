package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/executor"
	"github.com/ringjob/ringjob/internal/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m, dbtest.IgnoreFasthttp...) }

// chromiumPath finds Debian's chromium (or another Chrome) on PATH.
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// ringjob is a real `ringjob server` process on MariaDB.
type ringjob struct {
	t     *testing.T
	base  string
	token string
	dsn   string // its database, for tests that act on it as another replica would
	bin   string // the ringjob binary, for tests that also use the CLI
	mu    sync.Mutex
	out   bytes.Buffer
}

func (r *ringjob) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.Write(p)
}

func (r *ringjob) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// call sends an API request with the admin token and decodes the answer.
func (r *ringjob) call(method, path string, body any) map[string]any {
	r.t.Helper()
	b, err := json.Marshal(body)
	require.NoError(r.t, err)
	req, err := http.NewRequest(method, r.base+"/api/v1/"+path, bytes.NewReader(b))
	require.NoError(r.t, err)
	req.Header.Set("Authorization", "Bearer "+r.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(r.t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	require.Less(r.t, resp.StatusCode, 300, "%s %s: %s", method, path, raw)
	var out map[string]any
	require.NoError(r.t, json.Unmarshal(raw, &out))
	return out
}

// startRingjob starts a server; extra is YAML appended to its config.
func startRingjob(t *testing.T, extra ...string) *ringjob {
	t.Helper()
	return startRingjobWith(t, false, extra...)
}

// startRingjobWith starts a server; with generateToken it is given no admin
// token, so it generates one and logs it, as at a first start.
func startRingjobWith(t *testing.T, generateToken bool, extra ...string) *ringjob {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "ringjob")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/ringjob").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())

	dsn := dbtest.MySQL(t)
	cfg := fmt.Sprintf(`database_url: %q
listen: 127.0.0.1:%d
log: {level: info, format: json}
local:
  kill_grace: 1s
  commands:
    - name: ticker
      argv: ["/bin/sh", "-c", "for i in 1 2 3 4 5 6; do echo \"tick $i $RINGJOB_PARAMS\"; sleep 1; done"]
    - name: sleeper
      argv: ["/bin/sh", "-c", "echo going to sleep; exec sleep 120"]
    - name: quick
      argv: ["/bin/sh", "-c", "echo done"]
outbound: {allowed_cidrs: ["127.0.0.0/8"]}
`, mysqlURL(t, dsn), port) + strings.Join(extra, "\n")
	cfgPath := filepath.Join(dir, "ringjob.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o600))

	r := &ringjob{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port), token: "rj_consolee2eadmintoken0123456789", dsn: dsn, bin: bin}
	cmd := exec.Command(bin, "server", "--config", cfgPath)
	cmd.Env = append(os.Environ(), "RINGJOB_ADMIN_TOKEN="+r.token)
	if generateToken {
		r.token = ""
		cmd.Env = os.Environ()
	}
	cmd.Stdout, cmd.Stderr = r, r
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("server output:\n%s", r.output())
		}
	})
	require.Eventually(t, func() bool {
		resp, err := http.Get(r.base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		// This process's own line too: another package's server may have
		// taken the port since it was free.
		return resp.StatusCode == http.StatusOK && strings.Contains(r.output(), "is running")
	}, 30*time.Second, 100*time.Millisecond, "server never became ready:\n%s", r.output())
	return r
}

// mysqlURL turns a go-sql-driver DSN into the mysql:// URL the server takes.
func mysqlURL(t *testing.T, dsn string) string {
	t.Helper()
	m := regexp.MustCompile(`^([^:@]*)(?::([^@]*))?@tcp\(([^)]+)\)/([^?]+)`).FindStringSubmatch(dsn)
	require.NotNil(t, m, "unexpected dsn %q", dsn)
	u := url.URL{Scheme: "mysql", Host: m[3], Path: "/" + m[4], User: url.User(m[1])}
	if m[2] != "" {
		u.User = url.UserPassword(m[1], m[2])
	}
	return u.String()
}

// browser starts headless chromium and returns a tab context.
func browser(t *testing.T, chromium string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox, // the tests may run as root
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	// Browser errors go to the test log: a failing page says why.
	chromedp.ListenTarget(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			t.Logf("browser exception: %s", ev.ExceptionDetails.Error())
		case *runtime.EventConsoleAPICalled:
			for _, a := range ev.Args {
				t.Logf("browser console.%s: %s", ev.Type, a.Value)
			}
		}
	})
	ctx, cancelTimeout := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	// Start the browser on the long-lived context: a step's shorter one would
	// close it when the step ends.
	require.NoError(t, chromedp.Run(ctx), "start chromium")
	return ctx
}

// screenshot saves the page as docs/console/NAME.png when
// RINGJOB_UPDATE_DOCS=1 (the README shows them).
func screenshot(name string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		if os.Getenv("RINGJOB_UPDATE_DOCS") != "1" {
			return nil
		}
		var png []byte
		if err := chromedp.FullScreenshot(&png, 100).Do(ctx); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join("..", "docs", "console", name+".png"), png, 0o644)
	})
}

// clearInput empties an input, so that SendKeys types into an empty field.
func clearInput(sel string) chromedp.Action {
	var done bool
	return chromedp.Evaluate(fmt.Sprintf(`(() => { document.querySelector(%q).value = ""; return true; })()`, sel), &done)
}

// run runs one step of a flow within 20 s; when it fails, the test log
// shows the page as it was.
func run(t *testing.T, ctx context.Context, step string, actions ...chromedp.Action) {
	t.Helper()
	stepCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Run(stepCtx, actions...); err != nil {
		var page string
		_ = chromedp.Run(ctx, chromedp.Evaluate(`location.href + "\n" + document.querySelector("main").outerHTML`, &page))
		t.Fatalf("%s: %v\npage:\n%s", step, err, page)
	}
}

func TestConsoleInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test starts a server and chromium; skipped with -short")
	}
	chromium := chromiumPath()
	if chromium == "" {
		t.Skip("SKIPPED: chromium is not installed, so the console's browser test cannot run (apt-get install chromium; CI installs it)")
	}
	srv := startRingjob(t)

	// A group with the ticker command, an owner and a viewer of it.
	group := srv.call("POST", "groups", map[string]any{"app_name": "console-e2e", "title": "Console e2e", "members": []string{"local://ticker", "local://sleeper", "local://quick"},
		"executor_token": "console-e2e-executor-token", "accept_registrations": true})
	gid := group["id"]
	owner := srv.call("POST", "users", map[string]any{"name": "olivia", "password": "owner-password-1234"})
	srv.call("POST", "role-bindings", map[string]any{"role": "owner", "group_id": gid, "principal_id": owner["id"]})
	viewer := srv.call("POST", "users", map[string]any{"name": "victor", "password": "viewer-password-1234"})
	srv.call("POST", "role-bindings", map[string]any{"role": "viewer", "group_id": gid, "principal_id": viewer["id"]})

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
			chromedp.WaitVisible("#tile-jobs", chromedp.ByQuery), // the dashboard
		}
	}

	// A wrong password is refused with a readable message.
	var loginErr string
	run(t, ctx, "wrong password",
		chromedp.Navigate(srv.base+"/"),
		chromedp.WaitVisible("#username", chromedp.ByQuery),
		screenshot("sign-in"),
		chromedp.SendKeys("#username", "olivia", chromedp.ByQuery),
		chromedp.SendKeys("#password", "not-her-password", chromedp.ByQuery),
		chromedp.Click("#signin", chromedp.ByQuery),
		chromedp.Poll(`(document.querySelector("#login-error")?.textContent ?? "")`, &loginErr),
	)
	require.Equal(t, "Wrong user name or password.", loginErr)

	// The owner signs in and creates a job with a bad cron: the API's field
	// error shows under the schedule field.
	var fieldErr string
	run(t, ctx, "dashboard",
		signIn("olivia", "owner-password-1234"),
		chromedp.WaitVisible("#runs-chart canvas", chromedp.ByQuery),
	)
	checkA11y(t, ctx, "dashboard")
	run(t, ctx, "bad cron",
		chromedp.Navigate(srv.base+"/#/jobs"),
		chromedp.Click("#new-job", chromedp.ByQuery),
		chromedp.WaitVisible("#f-name", chromedp.ByQuery),
		chromedp.SendKeys("#f-name", "console-ticker", chromedp.ByQuery),
		// New jobs start stopped, as everywhere: by hand only, no scheduled
		// runs in the way.
		chromedp.WaitNotPresent("#f-enabled:checked", chromedp.ByQuery),
		chromedp.SendKeys("#f-schedule_conf", "every tuesday", chromedp.ByQuery),
		chromedp.Click("#save-job", chromedp.ByQuery),
		chromedp.Poll(`(() => { const t = (document.querySelector("#f-schedule_conf-error")?.textContent ?? ""); return t !== "" && t; })()`, &fieldErr),
	)
	require.Contains(t, fieldErr, "schedule_conf", "the field error names the field")
	var invalid string
	run(t, ctx, "aria-invalid", chromedp.AttributeValue("#f-schedule_conf", "aria-invalid", &invalid, nil, chromedp.ByQuery))
	require.Equal(t, "true", invalid)

	// Fixing the cron shows the next five fire times as it is typed.
	var fires []string
	run(t, ctx, "preview",
		clearInput("#f-schedule_conf"),
		chromedp.SendKeys("#f-schedule_conf", "0 0 9 * * ?", chromedp.ByQuery),
		clearInput("#f-time_zone"),
		chromedp.SendKeys("#f-time_zone", "Europe/Paris", chromedp.ByQuery),
		chromedp.Poll(`(() => { const li = [...document.querySelectorAll("#next-fires li")].map(e => e.textContent); return li.length === 5 && li.every(t => t.includes("Europe/Paris")) && li; })()`, &fires),
		screenshot("job-form"),
	)
	require.Len(t, fires, 5)
	checkA11y(t, ctx, "job form")
	var missing []string
	run(t, ctx, "every job field", chromedp.Evaluate(`["name","group_id","description","handler","params","schedule_type","schedule_conf","time_zone",
		"misfire_policy","enabled","route_strategy","shard_count","pinned_targets","block_strategy","max_in_flight","timeout_sec","retry_count",
		"retry_backoff","retry_delay_sec","retry_max_delay_sec","child_job_ids","alarm_channels"].filter(f => !document.querySelector("#f-" + f))`, &missing),
		// Pinned targets are picked from the group's candidates.
		chromedp.WaitVisible(`#f-pinned_targets input[value="local://ticker"]`, chromedp.ByQuery),
	)
	require.Empty(t, missing, "the form has every job field")
	for _, f := range fires {
		require.Contains(t, f, "T09:00:00+0", "9:00 in Paris, in the job's zone: %s", f)
	}

	// Save, then trigger by hand with params; the run page follows its log live.
	var params string
	run(t, ctx, "save and trigger",
		chromedp.Click("#save-job", chromedp.ByQuery),
		chromedp.WaitVisible("#trigger-job", chromedp.ByQuery),
		clearInput("#trigger-params"),
		chromedp.SendKeys("#trigger-params", "from-the-console", chromedp.ByQuery),
		chromedp.Click("#trigger-job", chromedp.ByQuery),
		chromedp.WaitVisible("#run-log", chromedp.ByQuery),
		// The run page re-renders its details as it polls: read them in one go.
		chromedp.Poll(`(() => { const p = document.querySelector("#run-params"); return p && p.textContent; })()`, &params),
	)
	require.Equal(t, "from-the-console", params)

	// Live: the page shows the first line while the run is still running,
	// before the last line exists.
	var partial bool
	run(t, ctx, "live log", chromedp.Poll(`(() => {
		const log = document.querySelector("#run-log").textContent;
		const state = document.querySelector("#run-state").textContent;
		return log.includes("tick 1 from-the-console") && !log.includes("tick 6") && state === "running";
	})()`, &partial, chromedp.WithPollingTimeout(20*time.Second)))
	require.True(t, partial)
	run(t, ctx, "screenshot", screenshot("run-live-log"))
	var final struct {
		Log, State, Status string
	}
	run(t, ctx, "run finishes", chromedp.Poll(`(() => {
		const s = document.querySelector("#run-state").textContent;
		const st = document.querySelector("#log-status").textContent;
		return s === "succeeded" && st.includes("finished") && {log: document.querySelector("#run-log").textContent, state: s, status: st};
	})()`, &final, chromedp.WithPollingTimeout(20*time.Second)))
	var details string
	run(t, ctx, "run details", chromedp.Evaluate(`document.querySelector("#run-details").textContent`, &details))
	require.Contains(t, details, "local://ticker")
	require.NotContains(t, details, "null", "unset fields read as a dash, not null")
	require.Equal(t, "tick 1 from-the-console\ntick 2 from-the-console\ntick 3 from-the-console\ntick 4 from-the-console\ntick 5 from-the-console\ntick 6 from-the-console\n", final.Log,
		"every line exactly once, in order")

	// The jobs list finds the job by name; the job page lists the run.
	var rows int
	run(t, ctx, "search",
		chromedp.Navigate(srv.base+"/#/jobs"),
		chromedp.WaitVisible("#job-search", chromedp.ByQuery),
		chromedp.WaitVisible(`#jobs tbody tr`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("#jobs").dataset.before = "search"`, nil),
		chromedp.SendKeys("#job-search", "ticker\n", chromedp.ByQuery),
		// The page renders anew: wait for the new table's rows.
		chromedp.Poll(`location.hash.includes("q=ticker") && !document.querySelector("#jobs").dataset.before &&
			document.querySelectorAll("tr[data-job]").length`, &rows),
		screenshot("jobs"),
	)
	require.Equal(t, 1, rows)

	// Editing works, and a save over someone else's change is refused (the
	// form sends the job's ETag as If-Match) with a readable message.
	var conflict string
	run(t, ctx, "edit",
		chromedp.Click(`tr[data-job] a`, chromedp.ByQuery),
		chromedp.Click("#edit-job", chromedp.ByQuery),
		chromedp.WaitVisible("#f-description", chromedp.ByQuery),
		chromedp.SendKeys("#f-description", "prints ticks", chromedp.ByQuery),
		chromedp.Click("#save-job", chromedp.ByQuery),
		chromedp.WaitVisible("#trigger-job", chromedp.ByQuery),
		chromedp.Click("#edit-job", chromedp.ByQuery),
		chromedp.WaitVisible("#f-description", chromedp.ByQuery),
	)
	var editedID string
	run(t, ctx, "job id", chromedp.Evaluate(`location.hash.match(/\d+/)[0]`, &editedID))
	require.Equal(t, "prints ticks", srv.call("GET", "jobs/"+editedID, nil)["description"])
	srv.call("PATCH", "jobs/"+editedID, map[string]any{"description": "changed elsewhere"})
	run(t, ctx, "conflict",
		chromedp.SendKeys("#f-description", " and more", chromedp.ByQuery),
		chromedp.Click("#save-job", chromedp.ByQuery),
		chromedp.Poll(`(() => { const t = (document.querySelector("#form-error")?.textContent ?? ""); return t !== "" && t; })()`, &conflict),
		chromedp.Navigate(srv.base+"/#/jobs?name=ticker"),
		chromedp.WaitVisible(`tr[data-job] a`, chromedp.ByQuery),
	)
	require.Contains(t, conflict, "Someone changed this since you opened it")
	require.Equal(t, "changed elsewhere", srv.call("GET", "jobs/"+editedID, nil)["description"])

	// Kill a sleeping run: trigger the job on the sleeper target, watch it
	// run, kill it from its page.
	var killed string
	run(t, ctx, "kill a sleeping run",
		chromedp.Navigate(srv.base+"/#/jobs/"+editedID),
		chromedp.WaitVisible("#trigger-target", chromedp.ByQuery),
		chromedp.SetValue("#trigger-target", "local://sleeper", chromedp.ByQuery),
		chromedp.Click("#trigger-job", chromedp.ByQuery),
		chromedp.WaitVisible("#run-log", chromedp.ByQuery),
		chromedp.Poll(`(document.querySelector("#run-log")?.textContent ?? "").includes("going to sleep") && (document.querySelector("#run-state")?.textContent ?? "") === "running"`, nil,
			chromedp.WithPollingTimeout(20*time.Second)),
	)
	// The Kill button asks first, showing what the kill stops; Cancel
	// changes nothing.
	var sleeperRun, scopeSummary, scopeJob string
	run(t, ctx, "kill asks first",
		chromedp.Evaluate(`location.hash.match(/\d+/)[0]`, &sleeperRun),
		chromedp.Click("#kill-run", chromedp.ByQuery),
		chromedp.WaitVisible("#kill-dialog", chromedp.ByQuery),
		chromedp.Poll(`(() => { const b = document.querySelector("#kill-confirm"); return b && !b.disabled && (document.querySelector("#kill-scope-summary")?.textContent ?? ""); })()`, &scopeSummary),
		chromedp.Text(`#kill-scope-runs tr[data-run] td:nth-child(2)`, &scopeJob, chromedp.ByQuery),
	)
	require.Equal(t, fmt.Sprintf("The kill stops run %s on local://sleeper, and nothing else.", sleeperRun), scopeSummary)
	sleeper := srv.call("GET", "runs/"+sleeperRun, nil)
	require.Equal(t, fmt.Sprintf("%v/%v", sleeper["app_name"], sleeper["job_name"]), scopeJob, "the runs the kill stops name their job")
	checkA11y(t, ctx, "kill dialog")
	run(t, ctx, "cancel the kill",
		chromedp.Click("#kill-cancel", chromedp.ByQuery),
		chromedp.WaitNotPresent("#kill-dialog", chromedp.ByQuery),
		chromedp.Sleep(1500*time.Millisecond), // what a kill would have changed by now
	)
	require.Equal(t, "running", srv.call("GET", "runs/"+sleeperRun, nil)["state"], "cancel changes nothing")
	run(t, ctx, "kill a sleeping run",
		chromedp.Click("#kill-run", chromedp.ByQuery),
		chromedp.WaitEnabled("#kill-confirm", chromedp.ByQuery),
		chromedp.Click("#kill-confirm", chromedp.ByQuery),
		chromedp.Poll(`(() => { const s = (document.querySelector("#run-state")?.textContent ?? ""); return s === "killed" && s; })()`, &killed,
			chromedp.WithPollingTimeout(20*time.Second)),
	)
	require.Equal(t, "killed", killed)
	checkA11y(t, ctx, "run page")

	// The runs list filters by job and state.
	var runRows int
	run(t, ctx, "runs list",
		chromedp.Navigate(srv.base+"/#/runs?job_id="+editedID+"&state=killed"),
		chromedp.WaitVisible(`tr[data-run]`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("tr[data-run]").length`, &runRows),
	)
	require.Equal(t, 1, runRows, "one killed run of the job")
	checkA11y(t, ctx, "runs list")

	// The runs list filters by target: the job ran once on each command.
	var byTarget []string
	run(t, ctx, "filter runs by target",
		chromedp.Navigate(srv.base+"/#/runs?job_id="+editedID),
		// The page before (state=killed) is on screen until this one draws:
		// wait for this one's own rows (its state filter is empty) before
		// marking its table, or the mark lands on the old table and this
		// page's unfiltered one passes for the filtered page below.
		chromedp.Poll(`document.querySelector("#runs-state") && document.querySelector("#runs-state").value === "" &&
			document.querySelectorAll("tr[data-run]").length > 1`, nil, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Evaluate(`document.querySelector("#runs").dataset.before = "filter"`, nil),
		chromedp.SendKeys("#runs-target", "local://sleeper", chromedp.ByQuery),
		chromedp.Click("#runs-filter", chromedp.ByQuery),
		// The page renders anew: wait for the new table.
		chromedp.Poll(`location.hash.includes("target=") && !document.querySelector("#runs").dataset.before && document.querySelectorAll("tr[data-run]").length > 0 &&
			[...document.querySelectorAll("tr[data-run]")].map(r => r.lastElementChild.textContent)`, &byTarget),
	)
	require.Equal(t, []string{"local://sleeper"}, byTarget)
	checkA11y(t, ctx, "runs list by target")

	// The jobs list filters by each job's last outcome: the killed run is
	// the job's last.
	var byOutcome []string
	run(t, ctx, "filter jobs by last outcome",
		chromedp.Navigate(srv.base+"/#/jobs"),
		chromedp.WaitVisible("#job-last-outcome", chromedp.ByQuery),
		chromedp.SetValue("#job-last-outcome", "killed", chromedp.ByQuery),
		chromedp.Click("#job-search-go", chromedp.ByQuery),
		chromedp.Poll(`location.hash.includes("last_outcome=killed") && document.querySelectorAll("tr[data-job]").length > 0 &&
			[...document.querySelectorAll("tr[data-job]")].map(r => r.querySelector("td a").textContent + " " + r.querySelector("td.last-outcome .state").textContent)`, &byOutcome),
	)
	require.Equal(t, []string{"console-ticker killed"}, byOutcome)
	var noneLeft string
	run(t, ctx, "no job never ran",
		chromedp.Navigate(srv.base+"/#/jobs?last_outcome=never"),
		chromedp.Poll(`document.querySelector("#job-last-outcome").value === "never" && document.querySelector("#jobs tbody td") &&
			document.querySelector("#jobs tbody td").textContent`, &noneLeft),
	)
	require.Equal(t, "No jobs.", noneLeft)

	// A run page links the exact child runs its success triggered, a child
	// run links its parent, and every run of a retry chain shows the chain.
	child := srv.call("POST", "jobs", map[string]any{"group_id": gid, "name": "flow-child", "pinned_targets": []string{"local://quick"}})
	parent := srv.call("POST", "jobs", map[string]any{"group_id": gid, "name": "flow-parent", "pinned_targets": []string{"local://quick"},
		"child_job_ids": []any{child["id"]}})
	flaky := srv.call("POST", "jobs", map[string]any{"group_id": gid, "name": "flow-flaky", "pinned_targets": []string{"local://sleeper"},
		"timeout_sec": 1, "retry_count": 1})
	parentRun := srv.call("POST", fmt.Sprintf("jobs/%v/trigger", parent["id"]), nil)
	var childLink, parentLink string
	run(t, ctx, "child runs on the run page",
		chromedp.Navigate(fmt.Sprintf("%s/#/runs/%v", srv.base, parentRun["id"])),
		chromedp.Poll(`(() => { const a = document.querySelector("#child-runs li a"); return a && a.textContent; })()`, &childLink,
			chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Click("#child-runs li a", chromedp.ByQuery),
		chromedp.Poll(`(() => { const a = document.querySelector("#run-parent a"); return a && a.textContent; })()`, &parentLink,
			chromedp.WithPollingTimeout(20*time.Second)),
	)
	require.Equal(t, fmt.Sprintf("run #%v", parentRun["id"]), parentLink)
	childRuns := srv.call("GET", fmt.Sprintf("runs?job_id=%v", child["id"]), nil)["items"].([]any)
	require.Len(t, childRuns, 1)
	require.Equal(t, fmt.Sprintf("#%v", childRuns[0].(map[string]any)["id"]), childLink, "the child run, exactly")
	checkA11y(t, ctx, "child run page")
	flakyRun := srv.call("POST", fmt.Sprintf("jobs/%v/trigger", flaky["id"]), nil)
	var chain []string
	var retriedBy, lastRetry string
	run(t, ctx, "retry chain on the run page",
		chromedp.Navigate(fmt.Sprintf("%s/#/runs/%v", srv.base, flakyRun["id"])),
		chromedp.Poll(`document.querySelectorAll("#retry-chain li").length === 2 && document.querySelector("#retry-chain li:nth-child(2) a")`, nil,
			chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Poll(`(() => { const a = document.querySelector("#run-retry a"); return a && a.textContent; })()`, &retriedBy,
			chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Click("#retry-chain li:nth-child(2) a", chromedp.ByQuery),
		// The page renders anew: wait until the marked run is the one shown.
		chromedp.Poll(`location.hash !== "#/runs/`+fmt.Sprint(flakyRun["id"])+`" && document.querySelectorAll("#retry-chain li").length === 2 &&
			document.querySelector("#retry-chain li[aria-current]").dataset.run === location.hash.match(/\d+$/)[0] &&
			[...document.querySelectorAll("#retry-chain li")].map(li => (li.getAttribute("aria-current") ? "*" : "") + li.dataset.run)`, &chain,
			chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Poll(`(() => { const t = (document.querySelector("#run-retry")?.textContent ?? ""); return t.startsWith("none") && t; })()`, &lastRetry,
			chromedp.WithPollingTimeout(20*time.Second)),
	)
	retries := srv.call("GET", fmt.Sprintf("runs?job_id=%v&trigger_type=retry", flaky["id"]), nil)["items"].([]any)
	require.Len(t, retries, 1)
	require.Equal(t, fmt.Sprintf("run #%v", retries[0].(map[string]any)["id"]), retriedBy, "the failed run says which run retries it")
	require.Equal(t, "none: this was the last attempt", lastRetry)
	require.Equal(t, []string{fmt.Sprint(flakyRun["id"]), fmt.Sprintf("*%v", retries[0].(map[string]any)["id"])}, chain,
		"the chain, first to last, on the retry's page (marked as this run)")

	// Trigger with shard options: only shard 3 of 3 (numbered from 0).
	var shard string
	run(t, ctx, "trigger one shard",
		chromedp.Navigate(fmt.Sprintf("%s/#/jobs/%v", srv.base, child["id"])),
		chromedp.WaitVisible("#trigger-shard-total", chromedp.ByQuery),
		chromedp.SendKeys("#trigger-shard-total", "3", chromedp.ByQuery),
		chromedp.SendKeys("#trigger-shard-index", "2", chromedp.ByQuery),
		chromedp.Click("#trigger-job", chromedp.ByQuery),
		chromedp.WaitVisible("#run-log", chromedp.ByQuery),
		chromedp.Poll(`(() => { const s = document.querySelector("#run-shard"); return s && s.textContent; })()`, &shard),
	)
	require.Equal(t, "3 of 3", shard)
	childRuns = srv.call("GET", fmt.Sprintf("runs?job_id=%v", child["id"]), nil)["items"].([]any)
	require.Len(t, childRuns, 2, "the child run and the one shard")
	require.Equal(t, 2.0, childRuns[0].(map[string]any)["shard_index"])
	require.Equal(t, 3.0, childRuns[0].(map[string]any)["shard_total"])
	checkA11y(t, ctx, "one shard's run page")
	for _, j := range []map[string]any{parent, child, flaky} {
		require.Equal(t, 204, srv.status("DELETE", fmt.Sprintf("jobs/%v", j["id"])))
	}

	// Stop, copy, delete.
	var enabledText, copyName string
	run(t, ctx, "start and stop",
		chromedp.Navigate(srv.base+"/#/jobs/"+editedID),
		chromedp.WaitVisible("#start-job", chromedp.ByQuery), // created stopped
		chromedp.Click("#start-job", chromedp.ByQuery),
		chromedp.WaitVisible("#stop-job", chromedp.ByQuery),
		chromedp.Click("#stop-job", chromedp.ByQuery),
		chromedp.WaitVisible("#start-job", chromedp.ByQuery),
		chromedp.Text("#job-enabled", &enabledText, chromedp.ByQuery),
	)
	require.Equal(t, "no", enabledText)
	require.Equal(t, false, srv.call("GET", "jobs/"+editedID, nil)["enabled"])
	run(t, ctx, "copy",
		chromedp.Click("#copy-job", chromedp.ByQuery),
		chromedp.WaitVisible("#f-name", chromedp.ByQuery),
		chromedp.Value("#f-name", &copyName, chromedp.ByQuery),
		chromedp.Click("#save-job", chromedp.ByQuery),
		chromedp.WaitVisible("#delete-job", chromedp.ByQuery),
	)
	require.Equal(t, "console-ticker-copy", copyName)
	var copyID, flashText string
	run(t, ctx, "copy id", chromedp.Evaluate(`location.hash.match(/\d+/)[0]`, &copyID))
	require.NotEqual(t, editedID, copyID)
	copied := srv.call("GET", "jobs/"+copyID, nil)
	require.Equal(t, "0 0 9 * * ?", copied["schedule_conf"], "the copy keeps the schedule")
	require.Equal(t, "Europe/Paris", copied["time_zone"])
	var sorted []string
	run(t, ctx, "sort by name",
		chromedp.Navigate(srv.base+"/#/jobs?q=console"),
		chromedp.WaitVisible("#job-sort", chromedp.ByQuery),
		chromedp.SetValue("#job-sort", "name", chromedp.ByQuery),
		chromedp.Click("#job-search-go", chromedp.ByQuery),
		chromedp.Poll(`location.hash.includes("sort=name") && document.querySelectorAll("tr[data-job]").length === 2 &&
			[...document.querySelectorAll("tr[data-job] td:first-child")].map(e => e.textContent)`, &sorted),
		chromedp.Navigate(srv.base+"/#/jobs/"+copyID),
		chromedp.WaitVisible("#delete-job", chromedp.ByQuery),
	)
	require.Equal(t, []string{"console-ticker", "console-ticker-copy"}, sorted)
	run(t, ctx, "delete",
		acceptDialogs(),
		chromedp.Click("#delete-job", chromedp.ByQuery),
		chromedp.WaitVisible("#job-search", chromedp.ByQuery),
		chromedp.Text("#flash", &flashText, chromedp.ByQuery),
	)
	require.Contains(t, flashText, "Deleted job “console-ticker-copy”")
	require.Equal(t, 404, srv.status("GET", "jobs/"+copyID))

	// An executor registers; the executors page lists it with its heartbeat.
	srv.registerExecutor("console-e2e", "console-e2e-executor-token", "http://127.0.0.1:9/")
	// A real executor registers too, and runs a handler that blocks until
	// it is killed: the page shows it busy, the other idle.
	busyAddr, stopExecutor := startExecutor(t, srv, "console-e2e", "console-e2e-executor-token")
	blocker := srv.call("POST", "jobs", map[string]any{"group_id": gid, "name": "flow-blocks", "handler": "block"})
	busyRun := srv.call("POST", fmt.Sprintf("jobs/%v/trigger", blocker["id"]), map[string]any{"target": busyAddr})
	require.Eventually(t, func() bool {
		return srv.call("GET", fmt.Sprintf("runs/%v", busyRun["id"]), nil)["state"] == "running"
	}, 20*time.Second, 100*time.Millisecond, "the executor runs the handler")
	var execRow string
	var load map[string]string
	run(t, ctx, "executors page",
		chromedp.Navigate(srv.base+"/#/groups"),
		chromedp.WaitVisible("#executors tbody tr td", chromedp.ByQuery),
		chromedp.Text("#executors tbody", &execRow, chromedp.ByQuery),
		chromedp.Evaluate(`Object.fromEntries([...document.querySelectorAll("#executors tbody tr")].map(r => [r.firstElementChild.textContent, r.querySelector(".executor-load").textContent]))`, &load),
		screenshot("executors"),
	)
	require.Contains(t, execRow, "http://127.0.0.1:9")
	require.Contains(t, execRow, "console-e2e")
	require.Equal(t, map[string]string{"http://127.0.0.1:9": "idle", strings.TrimSuffix(busyAddr, "/"): "busy (1 running)"}, load)
	checkA11y(t, ctx, "groups and executors")
	var busyRuns []string
	run(t, ctx, "busy links to its runs",
		chromedp.Click("#executors .executor-load a", chromedp.ByQuery),
		chromedp.Poll(`location.hash.includes("target=") && document.querySelectorAll("tr[data-run]").length > 0 &&
			[...document.querySelectorAll("tr[data-run]")].map(r => r.dataset.run)`, &busyRuns),
	)
	require.Equal(t, []string{fmt.Sprint(busyRun["id"])}, busyRuns)
	// A second run of the job waits behind the first on the executor
	// (serial execution). XXL-JOB's /kill is per job: the dialog of the
	// queued run says the kill stops both, and both end killed.
	queuedRun := srv.call("POST", fmt.Sprintf("jobs/%v/trigger", blocker["id"]), map[string]any{"target": busyAddr})
	require.Eventually(t, func() bool {
		return srv.call("GET", fmt.Sprintf("runs/%v", queuedRun["id"]), nil)["state"] == "running"
	}, 20*time.Second, 100*time.Millisecond, "the executor queues the second run")
	var wholeJob struct {
		Summary string
		Runs    []string
	}
	run(t, ctx, "kill scope of a run on an executor",
		chromedp.Navigate(fmt.Sprintf("%s/#/runs/%v", srv.base, queuedRun["id"])),
		chromedp.WaitVisible("#kill-run", chromedp.ByQuery),
		chromedp.Click("#kill-run", chromedp.ByQuery),
		chromedp.WaitEnabled("#kill-confirm", chromedp.ByQuery),
		chromedp.Evaluate(`({summary: document.querySelector("#kill-scope-summary").textContent,
			runs: [...document.querySelectorAll("#kill-scope-runs tr[data-run]")].map(r => r.dataset.run)})`, &wholeJob),
		screenshot("run-kill-scope"),
	)
	require.Equal(t, []string{fmt.Sprint(queuedRun["id"]), fmt.Sprint(busyRun["id"])}, wholeJob.Runs, "the run itself first, then the one the kill stops with it")
	require.Contains(t, wholeJob.Summary, fmt.Sprintf("also run %v", busyRun["id"]))
	require.Contains(t, wholeJob.Summary, "stops every run of job")
	run(t, ctx, "kill both", chromedp.Click("#kill-confirm", chromedp.ByQuery), chromedp.WaitNotPresent("#kill-dialog", chromedp.ByQuery))
	for _, r := range []map[string]any{busyRun, queuedRun} {
		require.Eventually(t, func() bool {
			return srv.call("GET", fmt.Sprintf("runs/%v", r["id"]), nil)["state"] == "killed"
		}, 20*time.Second, 100*time.Millisecond, "the kill reaches the executor and stops run %v", r["id"])
	}
	stopExecutor() // its callback of the killed run arrives before the job and its runs go
	require.Equal(t, 204, srv.status("DELETE", fmt.Sprintf("jobs/%v", blocker["id"])))

	var tileJobs string
	// The dashboard counts the runs once the reports roll them up.
	var counted string
	run(t, ctx, "dashboard with runs",
		chromedp.Navigate(srv.base+"/#/?period=hour"),
		chromedp.WaitVisible("#runs-chart canvas", chromedp.ByQuery),
		chromedp.Poll(`(() => {
			const n = document.querySelector("#run-totals strong");
			if (n && n.textContent !== "0") return n.textContent;
			if (!window.__reloading) { window.__reloading = true; setTimeout(() => { window.__reloading = false; dispatchEvent(new HashChangeEvent("hashchange")); }, 2000); }
			return false;
		})()`, &counted, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Text("#tile-jobs", &tileJobs, chromedp.ByQuery),
		screenshot("dashboard"),
	)
	require.NotEqual(t, "0", counted)
	require.Regexp(t, `^Jobs\s*1\s*0 enabled$`, tileJobs, "one job, stopped")
	run(t, ctx, "back to the jobs",
		chromedp.Navigate(srv.base+"/#/jobs?q=ticker"),
		chromedp.WaitVisible(`tr[data-job] a`, chromedp.ByQuery),
	)
	checkA11y(t, ctx, "jobs list")

	// At phone width the page has no horizontal scroll.
	var overflow bool
	run(t, ctx, "phone width",
		emulation.SetDeviceMetricsOverride(390, 844, 2, true),
		chromedp.Sleep(200*time.Millisecond),
		chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth + 1`, &overflow),
		screenshot("jobs-phone"),
		emulation.ClearDeviceMetricsOverride(),
	)
	require.False(t, overflow, "the jobs list fits a phone's width")
	for _, page := range []struct{ path, ready string }{
		{"/#/", "#runs-chart canvas"},
		{"/#/jobs/" + editedID + "/edit", "#next-fires li"},
		{"/#/jobs/" + editedID, "#job-runs"},
		{"/#/runs?job_id=" + editedID, "tr[data-run]"},
		{"/#/groups", "#executors"},
	} {
		run(t, ctx, "phone width "+page.path,
			emulation.SetDeviceMetricsOverride(390, 844, 2, true),
			chromedp.Navigate(srv.base+page.path),
			chromedp.WaitVisible(page.ready, chromedp.ByQuery),
			chromedp.Sleep(200*time.Millisecond),
			chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth + 1`, &overflow),
			emulation.ClearDeviceMetricsOverride(),
		)
		require.False(t, overflow, "%s fits a phone's width", page.path)
	}
	var toolbarRows int
	run(t, ctx, "back to the jobs list",
		chromedp.Navigate(srv.base+"/#/jobs?q=ticker"),
		chromedp.WaitVisible(`tr[data-job] a`, chromedp.ByQuery),
		// The browser is 1280 px wide, a laptop's: the toolbar is one row.
		chromedp.Evaluate(`new Set([...document.querySelector("form.jobs-filters").children].map((c) => Math.round(c.getBoundingClientRect().bottom))).size`, &toolbarRows),
	)
	require.Equal(t, 1, toolbarRows, "the jobs toolbar fits one row at 1280 px")

	// Sign out; the viewer sees the job but no edit, trigger or new-job
	// buttons, and the edit page says why it cannot be used.
	var jobID string
	var buttons int
	var editMsg string
	run(t, ctx, "sign out, viewer signs in",
		chromedp.Click(`tr[data-job] a`, chromedp.ByQuery),
		chromedp.WaitVisible("#edit-job", chromedp.ByQuery),
		chromedp.Evaluate(`location.hash.match(/\d+/)[0]`, &jobID),
		chromedp.Click("#signout", chromedp.ByQuery),
		chromedp.WaitVisible("#username", chromedp.ByQuery),
		signIn("victor", "viewer-password-1234"),
		chromedp.Navigate(srv.base+"/#/jobs"),
		chromedp.WaitVisible("#job-search", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("#new-job").length`, &buttons),
	)
	require.Zero(t, buttons, "a viewer is not offered to create jobs")
	run(t, ctx, "viewer job page",
		chromedp.Navigate(srv.base+"/#/jobs/"+jobID),
		chromedp.WaitVisible("#job-runs", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("#edit-job, #trigger-job, #stop-job, #start-job").length`, &buttons),
		chromedp.Navigate(srv.base+"/#/jobs/"+jobID+"/edit"),
		chromedp.Poll(`(() => { const p = document.querySelector("main p[role=alert]"); return p && p.textContent; })()`, &editMsg),
	)
	require.Zero(t, buttons, "a viewer is not offered to edit, trigger, start or stop")
	require.Contains(t, editMsg, "jobs.write")
	var copyMsg, groupButtons string
	run(t, ctx, "viewer cannot copy or edit groups",
		chromedp.Navigate(srv.base+"/#/jobs/"+jobID+"/copy"),
		// Wait for the copy page itself (the edit page before it has the
		// same alert): a page still loading would draw over the next one.
		chromedp.Poll(`(() => { const p = document.querySelector("main p[role=alert]"); const t = document.querySelector("main h1");
			return p && t && t.textContent.startsWith("Copy of") && p.textContent; })()`, &copyMsg),
		chromedp.Navigate(fmt.Sprintf("%s/#/groups/%v", srv.base, gid)),
		chromedp.WaitVisible("#group-executors", chromedp.ByQuery),
		chromedp.Evaluate(`String(document.querySelectorAll("#edit-group, #new-group, #copy-job, #delete-job").length)`, &groupButtons),
	)
	require.Contains(t, copyMsg, "jobs.write")
	require.Equal(t, "0", groupButtons)

	// A 403 from the API is a readable message, not a blank page: the
	// viewer opens a job of a group they have no role on.
	other := srv.call("POST", "groups", map[string]any{"app_name": "console-e2e-other", "title": "Other", "members": []string{"local://ticker"}})
	hidden := srv.call("POST", "jobs", map[string]any{"group_id": other["id"], "name": "not-for-victor", "schedule_type": "none"})
	var denied string
	run(t, ctx, "403 page",
		chromedp.Navigate(fmt.Sprintf("%s/#/jobs/%v", srv.base, hidden["id"])),
		chromedp.Poll(`(() => { const p = document.querySelector("#page-error"); return p && p.textContent; })()`, &denied),
	)
	require.Contains(t, denied, "You do not have permission")
	require.Contains(t, denied, "jobs.read")
	require.False(t, strings.Contains(srv.output(), "viewer-password-1234"), "passwords are never logged")
}

// startExecutor runs a real XXL-JOB executor (package executor) on a
// loopback port, registered with srv in appName, with a handler "block"
// that runs until it is killed. It returns the executor's address and a
// function that stops it (leaves the registry, sends what it has to report).
func startExecutor(t *testing.T, srv *ringjob, appName, token string) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := "http://" + ln.Addr().String() + "/"
	e, err := executor.New(executor.WithAdminAddresses(srv.base), executor.WithAccessToken(token), executor.WithAppName(appName),
		executor.WithAddress(addr), executor.WithLogDir(t.TempDir()), executor.WithShutdownGrace(time.Second),
		executor.WithLogger(testLogger{t}))
	require.NoError(t, err)
	e.Register("block", func(ctx context.Context, job *executor.Job) error {
		job.Log("blocking until killed")
		<-ctx.Done()
		return ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Serve(ctx, ln) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)
	var seen []any
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		seen = srv.call("GET", "executors", nil)["items"].([]any)
		found := false
		for _, it := range seen {
			found = found || it.(map[string]any)["address"] == strings.TrimSuffix(addr, "/") // listed without the slash
		}
		if found {
			break
		}
		require.False(t, time.Now().After(deadline), "the executor %s registers; listed: %v", addr, seen)
	}
	return addr, stop
}

// testLogger sends an executor's own messages to the test log.
type testLogger struct{ t *testing.T }

func (l testLogger) Infof(format string, args ...any)  { l.t.Logf("executor: "+format, args...) }
func (l testLogger) Errorf(format string, args ...any) { l.t.Logf("executor error: "+format, args...) }
