package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
)

// TestFirstStartToAnAdminUser follows the banner of a fresh server: it
// prints the console URL and the command that makes the first admin user
// through the API with the generated admin token; run as printed (no
// database access), that command prints a password that signs in.
func TestFirstStartToAnAdminUser(t *testing.T) {
	t.Setenv("RINGJOB_LOG_FORMAT", "text") // the banner a person reads
	s := startServer(t, mysqlURL(t, dbtest.MySQL(t)), "")
	var banner string
	require.Eventually(t, func() bool {
		banner = s.output()
		return strings.Contains(banner, "ringjob admin create-user")
	}, 10*time.Second, 20*time.Millisecond, "no first sign-in hint: %s", s.output())
	require.Contains(t, banner, "Console: "+s.base+"/")
	line := regexp.MustCompile(`(?m)^\s*(RINGJOB_URL=\S+ RINGJOB_TOKEN=\S+) ringjob (admin create-user admin --role admin)\s*$`).FindStringSubmatch(banner)
	require.NotNil(t, line, "the banner prints a command to run: %s", banner)
	require.Contains(t, line[1], "RINGJOB_TOKEN="+s.token, "with the admin token it generated")

	c := newCLI(t, s)
	r := c.runWith(strings.Fields(line[1]), "", strings.Fields(line[2])...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `created admin user "admin"`)
	require.Contains(t, r.stdout, "Sign in to the console at "+s.base+"/")
	pw := regexp.MustCompile(`(?m)^\s{4}(\S+)\s*$`).FindStringSubmatch(r.stdout)
	require.NotNil(t, pw, r.stdout)
	code, _ := s.callAs("", "POST", "/api/v1/session", map[string]any{"username": "admin", "password": pw[1]}, nil)
	require.Equal(t, 201, code, "the printed password signs in")
	code, me := s.call("GET", "/api/v1/role-bindings", nil, nil)
	require.Equal(t, 200, code)
	require.Contains(t, fmt.Sprint(me["items"]), "role:admin", "the user is admin")

	// Again: the password is reset, and the old one no longer signs in.
	r = c.runWith(strings.Fields(line[1]), "", strings.Fields(line[2])...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `reset the password of admin user "admin"`)
	code, _ = s.callAs("", "POST", "/api/v1/session", map[string]any{"username": "admin", "password": pw[1]}, nil)
	require.Equal(t, 401, code)

	// A token that is not an admin's is refused, in one line naming the server.
	r = c.runWith([]string{"RINGJOB_URL=" + s.base, "RINGJOB_TOKEN=rj_wrong_token_00000000000000000000"}, "", "admin", "create-user", "bob", "--role", "admin")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, s.base)
	oneLine(t, r)
}

// TestAccessCommands onboards a CI account with the CLI alone: a group
// role, a token, the audit of it; users are created with a role, renamed,
// given a new password and deleted.
func TestAccessCommands(t *testing.T) {
	token := "cli-access-admin-token-0123456789abcdefgh"
	s := startServer(t, mysqlURL(t, dbtest.MySQL(t)), token)
	c := newCLI(t, s)
	c.ok("login", s.base, "--token", token, "--name", "local")
	c.ok("groups", "create", "payments", "--member", "local://hello")

	// A service account with a role and a token, in one command.
	var sa struct {
		ID    int64  `json:"id"`
		Name  string `json:"name"`
		Token string `json:"token"`
	}
	c.json(&sa, "service-accounts", "create", "ci", "--role", "owner", "--group", "payments", "--token", "ci-deploy")
	require.Equal(t, "ci", sa.Name)
	require.True(t, strings.HasPrefix(sa.Token, "rj_"), "the token is printed once: %+v", sa)
	ci := newCLI(t, s)
	r := ci.runWith([]string{"RINGJOB_URL=" + s.base, "RINGJOB_TOKEN=" + sa.Token}, "", "jobs", "create", "payments/settle", "--handler", "hello")
	require.Equal(t, 0, r.code, "the owner of payments may create its jobs: %s", r.stderr)
	r = ci.runWith([]string{"RINGJOB_URL=" + s.base, "RINGJOB_TOKEN=" + sa.Token}, "", "users", "list")
	require.Equal(t, 1, r.code, "but is no admin")
	require.Contains(t, r.stderr, "permission denied")

	out := c.ok("role-bindings", "list")
	require.Regexp(t, `owner\s+payments\s+ci\s+service`, out)
	var bindings []map[string]any
	c.json(&bindings, "role-bindings", "list")
	require.NotEmpty(t, bindings)

	// Tokens: listed by owner, revoked by id.
	var toks []struct {
		ID            int64  `json:"id"`
		Name          string `json:"name"`
		PrincipalName string `json:"principal_name"`
	}
	c.json(&toks, "tokens", "list", "--for", "ci")
	require.Len(t, toks, 1)
	require.Equal(t, "ci-deploy", toks[0].Name)
	second := strings.TrimSpace(c.ok("tokens", "create", "ci-second", "--for", "ci", "--expires-in", "24h"))
	require.True(t, strings.HasPrefix(second, "rj_"), "table output is the token alone on stdout: %q", second)
	require.Contains(t, c.run("tokens", "revoke", fmt.Sprint(toks[0].ID)).stderr, `Revoked token "ci-deploy"`)
	r = ci.runWith([]string{"RINGJOB_URL=" + s.base, "RINGJOB_TOKEN=" + sa.Token}, "", "jobs", "list")
	require.Equal(t, 1, r.code, "a revoked token is refused")
	c.fails(2, "a token is named by its id", "tokens", "revoke", "ci-deploy")

	// Users: created with a role and a password from stdin; renamed;
	// a new password generated; deleted.
	r = c.runWith(nil, "alice-password-123456\n", "users", "create", "alice", "--role", "viewer", "--group", "payments", "--password-stdin", "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, `Granted viewer to "alice"`)
	code, _ := s.callAs("", "POST", "/api/v1/session", map[string]any{"username": "alice", "password": "alice-password-123456"}, nil)
	require.Equal(t, 201, code)
	c.fails(1, `no group with app name "nosuch"`, "users", "create", "bob", "--role", "viewer", "--group", "nosuch")
	require.NotContains(t, c.ok("users", "list"), "bob", "a wrong --group creates nothing")
	c.fails(2, "use one of admin, owner, operator, viewer", "users", "create", "bob", "--role", "superuser")
	c.ok("users", "edit", "alice", "--name", "alice2")
	require.Contains(t, c.ok("users", "get", "alice2"), "alice2")
	r = c.run("users", "set-password", "alice2")
	require.Equal(t, 0, r.code, r.stderr)
	pw := regexp.MustCompile(`(?m)^\s{4}(\S+)\s*$`).FindStringSubmatch(r.stderr)
	require.NotNil(t, pw, r.stderr)
	code, _ = s.callAs("", "POST", "/api/v1/session", map[string]any{"username": "alice2", "password": pw[1]}, nil)
	require.Equal(t, 201, code, "the generated password signs in")
	c.ok("users", "edit", "alice2", "--disabled")
	var alice map[string]any
	c.json(&alice, "users", "get", "alice2")
	require.Equal(t, true, alice["disabled"])
	c.fails(2, "nothing to change", "users", "edit", "alice2")
	c.ok("users", "delete", "alice2")
	c.fails(1, `no user named "alice2"`, "users", "get", "alice2")

	// The audit log shows what changed, readably, and pages.
	out = c.ok("audit", "list", "--action", "user.update")
	require.Contains(t, out, `name: "alice" -> "alice2"`)
	require.Contains(t, out, `disabled: false -> true`)
	out = c.ok("audit", "list", "--object-type", "service", "--limit", "5")
	require.Contains(t, out, `name="ci"`, "a create shows the fields it set")
	var events []map[string]any
	c.json(&events, "audit", "list", "--limit", "2")
	require.Len(t, events, 2)
	r = c.run("audit", "list", "--limit", "2")
	cur := regexp.MustCompile(`--cursor (\S+)`).FindStringSubmatch(r.stderr)
	require.NotNil(t, cur, "the next page is said: %s", r.stderr)
	var next []map[string]any
	c.json(&next, "audit", "list", "--limit", "2", "--cursor", cur[1])
	require.Len(t, next, 2)
	require.Less(t, next[0]["id"].(float64), events[1]["id"].(float64), "the next page is older")
	c.fails(2, "want an RFC 3339 time", "audit", "list", "--from", "yesterday")
}

// TestRunsNameTheirJobs: `runs list` shows GROUP/NAME, takes --job
// GROUP/NAME, and -o json carries job_name and app_name.
func TestRunsNameTheirJobs(t *testing.T) {
	token := "cli-runs-admin-token-0123456789abcdefghij"
	s := startServer(t, mysqlURL(t, dbtest.MySQL(t)), token)
	c := newCLI(t, s)
	c.ok("login", s.base, "--token", token, "--name", "local")
	c.ok("groups", "create", "names", "--member", "local://hello")
	c.ok("jobs", "create", "names/first", "--handler", "hello")
	c.ok("jobs", "create", "names/second", "--handler", "hello")
	c.ok("jobs", "trigger", "names/first", "--wait")
	c.ok("jobs", "trigger", "names/second", "--wait")

	out := c.ok("runs", "list")
	require.Contains(t, out, "names/first")
	require.Contains(t, out, "names/second")
	require.NotContains(t, out, "JOB ID")
	var runs []struct {
		JobName string `json:"job_name"`
		AppName string `json:"app_name"`
	}
	c.json(&runs, "runs", "list", "--job", "names/second")
	require.Len(t, runs, 1)
	require.Equal(t, "second", runs[0].JobName)
	require.Equal(t, "names", runs[0].AppName)

	// An unknown context is a usage error (exit 2), as the README says.
	r := c.fails(2, `--context "nosuch" is not in`, "runs", "list", "--context", "nosuch")
	require.Contains(t, r.stderr, "Run 'ringjob runs list --help'")
}

// TestLoginAsksBeforeSwitching: at a terminal, a login to a second server
// asks before making it current; "n" keeps the current one.
func TestLoginAsksBeforeSwitching(t *testing.T) {
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("SKIPPED: script(1) is not installed, so no terminal can be given to login")
	}
	token := "cli-login-admin-token-0123456789abcdefghi"
	s := startServer(t, mysqlURL(t, dbtest.MySQL(t)), token)
	c := newCLI(t, s)
	c.ok("login", s.base, "--token", token, "--name", "first")
	bin := ringjobBinary(t)
	for _, tc := range []struct {
		answer, current string
	}{{"n", "first"}, {"y", "second"}} {
		cmd := exec.Command(scriptBin, "-qc", bin+" login "+s.base+" --token "+token+" --name second", "/dev/null")
		cmd.Env = c.env
		cmd.Stdin = strings.NewReader(tc.answer + "\n")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), `Make "second" (`+s.base+`) the current context instead of "first"? [y/N]`)
		var contexts []struct {
			Name    string `json:"name"`
			Current bool   `json:"current"`
		}
		require.NoError(t, json.Unmarshal([]byte(c.ok("context", "list", "-o", "json")), &contexts))
		for _, x := range contexts {
			require.Equal(t, x.Name == tc.current, x.Current, "answer %q: %+v", tc.answer, contexts)
		}
	}
}

// TestBannerHintOnlyAtFirstStart: the first sign-in hint shows while no
// user exists, with the generated token or a placeholder for a configured one.
func TestBannerHintOnlyAtFirstStart(t *testing.T) {
	cfg := &Config{PublicURL: "http://127.0.0.1:9090"}
	var b strings.Builder
	printBanner(&b, cfg, "n1", "sqlite", "", false, "rj_generated", true)
	require.Contains(t, b.String(), "Console: http://127.0.0.1:9090/")
	require.Contains(t, b.String(), "RINGJOB_URL=http://127.0.0.1:9090 RINGJOB_TOKEN=rj_generated ringjob admin create-user admin --role admin")
	b.Reset()
	printBanner(&b, cfg, "n1", "sqlite", "", false, "", true)
	require.Contains(t, b.String(), "RINGJOB_TOKEN=<your admin token> ringjob admin create-user")
	b.Reset()
	printBanner(&b, cfg, "n1", "sqlite", "", false, "", false)
	require.Contains(t, b.String(), "Console: http://127.0.0.1:9090/")
	require.NotContains(t, b.String(), "create-user", "once a user exists, no first sign-in hint")
}
