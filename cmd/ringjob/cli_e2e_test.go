package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/ringjob/ringjob/client"
	"github.com/ringjob/ringjob/internal/dbtest"
)

// cli runs the real ringjob binary as a user would: its own HOME and
// config directory, no RINGJOB_* variables unless given.
type cli struct {
	t      *testing.T
	home   string
	env    []string
	server *server
}

type result struct {
	stdout, stderr string
	code           int
}

func newCLI(t *testing.T, s *server) *cli {
	home := t.TempDir()
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "PATH=" + os.Getenv("PATH")}
	return &cli{t: t, home: home, env: env, server: s}
}

func (c *cli) configPath() string { return filepath.Join(c.home, ".config", "ringjob", "config.yaml") }

// run runs `ringjob args...` with extra environment and stdin.
func (c *cli) runWith(env []string, stdin string, args ...string) result {
	c.t.Helper()
	cmd := exec.Command(ringjobBinary(c.t), args...)
	cmd.Env = append(append([]string{}, c.env...), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(c.t, err)
	}
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

func (c *cli) run(args ...string) result {
	c.t.Helper()
	return c.runWith(nil, "", args...)
}

// ok runs a command that must succeed and answers its stdout.
func (c *cli) ok(args ...string) string {
	c.t.Helper()
	r := c.run(args...)
	require.Equal(c.t, 0, r.code, "ringjob %v: stdout %s\nstderr %s", args, r.stdout, r.stderr)
	return r.stdout
}

// json runs a command with -o json and decodes its output into v.
func (c *cli) json(v any, args ...string) {
	c.t.Helper()
	out := c.ok(append(args, "-o", "json")...)
	require.NoError(c.t, json.Unmarshal([]byte(out), v), "ringjob %v: %s", args, out)
}

// fails runs a command that must exit with code and say why in one line
// that contains want.
func (c *cli) fails(code int, want string, args ...string) result {
	c.t.Helper()
	r := c.run(args...)
	require.Equal(c.t, code, r.code, "ringjob %v: stdout %s\nstderr %s", args, r.stdout, r.stderr)
	require.Contains(c.t, r.stderr, want, "ringjob %v", args)
	return r
}

func oneLine(t *testing.T, r result) {
	t.Helper()
	require.Equal(t, 1, strings.Count(strings.TrimRight(r.stderr, "\n"), "\n")+1, "one line: %q", r.stderr)
}

// TestCLI drives every client subcommand of the real binary against a real
// server on MariaDB: login and contexts, groups, jobs, runs, executors,
// next-fires, completion, output formats and exit codes.
func TestCLI(t *testing.T) {
	token := "cli-admin-token-0123456789abcdefghijklmn"
	s := startServer(t, mysqlURL(t, dbtest.MySQL(t)), token)
	c := newCLI(t, s)

	// Before login: no server, said in one line; an unreachable server too.
	r := c.fails(1, "ringjob login URL", "jobs", "list")
	oneLine(t, r)
	r = c.runWith([]string{"RINGJOB_URL=http://127.0.0.1:1", "RINGJOB_TOKEN=x"}, "", "jobs", "list")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "cannot reach the server at http://127.0.0.1:1")
	oneLine(t, r)

	// A wrong token is refused at login and nothing is stored.
	r = c.runWith(nil, "rj_not_a_token\n", "login", s.base, "--token-stdin")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "refused the token")
	oneLine(t, r)
	require.NoFileExists(t, c.configPath())

	// login stores a context, 0600 in a 0700 directory, and makes it current.
	r = c.runWith(nil, token+"\n", "login", s.base, "--token-stdin", "--name", "local")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `context "local" is now current`)
	fi, err := os.Stat(c.configPath())
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	di, err := os.Stat(filepath.Dir(c.configPath()))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), di.Mode().Perm())
	// A second login without a terminal keeps the current context (the
	// next command must not go to another server by surprise); --use switches.
	require.Contains(t, c.ok("login", s.base, "--token", token, "--name", "other"), `the current context is still "local"`)
	var contexts []struct {
		Name    string `json:"name"`
		Server  string `json:"server"`
		Current bool   `json:"current"`
	}
	c.json(&contexts, "context", "list")
	require.Len(t, contexts, 2)
	require.True(t, contexts[0].Current, "a second login does not switch silently: %+v", contexts)
	require.Contains(t, c.ok("login", s.base, "--token", token, "--name", "other", "--use"), `context "other" is now current`)
	c.json(&contexts, "context", "list")
	require.True(t, contexts[1].Current, "login --use switches: %+v", contexts)
	require.Contains(t, c.ok("context", "use", "local"), `"local" is now current`)
	require.Contains(t, c.ok("context", "list"), "*        local")
	c.fails(1, `no context "nope"`, "context", "use", "nope")
	r = c.runWith([]string{"RINGJOB_TOKEN=rj_expired_or_wrong_token_000000000000"}, "", "groups", "list")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "refused the token (missing, wrong or expired)")
	oneLine(t, r)
	// A real token that worked, once expired or revoked, is said in one line
	// too, and the command fails.
	admin := client.New(s.base, token, nil)
	ci, err := admin.CreateServiceAccount(context.Background(), "cli-ci")
	require.NoError(t, err)
	_, err = admin.CreateRoleBinding(context.Background(), client.RoleBindingInput{Role: "admin", PrincipalID: ci.ID})
	require.NoError(t, err)
	short, err := admin.CreateToken(context.Background(), client.TokenInput{Name: "cli-short-lived", PrincipalID: ci.ID, ExpiresInSec: 2})
	require.NoError(t, err)
	revoked, err := admin.CreateToken(context.Background(), client.TokenInput{Name: "cli-revoked", PrincipalID: ci.ID})
	require.NoError(t, err)
	withToken := func(tok string) result {
		return c.runWith([]string{"RINGJOB_URL=" + s.base, "RINGJOB_TOKEN=" + tok}, "", "groups", "list")
	}
	r = withToken(short.Token)
	require.Equal(t, 0, r.code, "the short-lived token works before it expires: %s", r.stderr)
	require.Equal(t, 0, withToken(revoked.Token).code)
	_, err = admin.RevokeToken(context.Background(), revoked.ID)
	require.NoError(t, err)
	r = withToken(revoked.Token)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "refused the token (missing, wrong or expired)")
	oneLine(t, r)
	require.Eventually(t, func() bool {
		r = withToken(short.Token)
		return r.code == 1
	}, 15*time.Second, 250*time.Millisecond, "the token expires after 2 s")
	require.Contains(t, r.stderr, "refused the token (missing, wrong or expired)")
	oneLine(t, r)
	// RINGJOB_URL and RINGJOB_TOKEN alone are enough (CI without a config file).
	bare := newCLI(t, s)
	r = bare.runWith([]string{"RINGJOB_URL=" + s.base, "RINGJOB_TOKEN=" + token}, "", "groups", "list", "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)

	// Groups.
	for app, member := range map[string]string{"cli-hello": "local://hello", "cli-fail": "local://fail", "cli-talk": "local://talk", "cli-nap": "local://nap"} {
		c.ok("groups", "create", app, "--title", "CLI "+app, "--member", member)
	}
	var groups []map[string]any
	c.json(&groups, "groups", "list")
	require.GreaterOrEqual(t, len(groups), 4)
	var g map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(c.ok("groups", "get", "cli-hello", "-o", "yaml")), &g))
	require.Equal(t, "CLI cli-hello", g["title"])
	require.Equal(t, []any{"local://hello"}, g["members"])
	c.json(&g, "groups", "edit", "cli-hello", "--title", "Hello")
	require.Equal(t, "Hello", g["title"])
	c.json(&g, "groups", "edit", "cli-hello", "--title", "Hello")
	editor := writeScript(t, `sed -i 's/^title: .*/title: Edited in editor/' "$1"`)
	r = c.inTerminal([]string{"EDITOR=" + editor}, "groups", "edit", "cli-hello", "-o", "json")
	require.Equal(t, 0, r.code, r.stdout)
	require.Contains(t, r.stdout, `"title": "Edited in editor"`)
	require.Contains(t, c.ok("groups", "list"), "Edited in editor")

	// Jobs: create by flags and from a file, list, get by name and id.
	c.ok("jobs", "create", "cli-hello/hello", "--handler", "hello", "--schedule-type", "cron", "--schedule", "0 0 3 * * ?", "--tz", "Europe/Paris", "--params", "p1")
	c.ok("jobs", "create", "cli-fail/fail", "--handler", "fail")
	c.ok("jobs", "create", "cli-nap/nap", "--handler", "nap")
	var nap map[string]any
	c.json(&nap, "jobs", "get", "cli-nap/nap")
	jobFile := filepath.Join(t.TempDir(), "talk.yaml")
	require.NoError(t, os.WriteFile(jobFile, []byte(fmt.Sprintf("group_id: %d\nname: talk\nhandler: talk\ndescription: from a file\n", num(mustGroupID(t, c, "cli-talk")))), 0o600))
	var talk map[string]any
	c.json(&talk, "jobs", "create", "-f", jobFile)
	require.Equal(t, "from a file", talk["description"])
	c.fails(1, "name", "jobs", "create", "cli-hello/hello", "--handler", "hello") // taken
	c.fails(1, "schedule_conf", "jobs", "create", "cli-hello/bad", "--schedule-type", "cron", "--schedule", "not a cron")

	table := c.ok("jobs", "list")
	require.Regexp(t, `(?m)^ID\s+JOB\s+SCHEDULE`, table)
	require.Contains(t, table, "cli-hello/hello")
	require.Contains(t, table, "cron 0 0 3 * * ?")
	var jobs []map[string]any
	c.json(&jobs, "jobs", "list", "--group", "cli-hello")
	require.Len(t, jobs, 1)
	require.Equal(t, "hello", jobs[0]["name"])
	var hello map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(c.ok("jobs", "get", "cli-hello/hello", "-o", "yaml")), &hello))
	require.Equal(t, "Europe/Paris", hello["time_zone"])
	var byID map[string]any
	c.json(&byID, "jobs", "get", fmt.Sprint(hello["id"]))
	require.Equal(t, "hello", byID["name"])
	c.fails(1, "does not exist", "jobs", "get", "cli-hello/nope")

	// edit: by flags, in $EDITOR, and refused when someone else edited the
	// job while the editor was open (If-Match).
	var edited map[string]any
	c.json(&edited, "jobs", "edit", "cli-hello/hello", "--retries", "2", "--description", "by flags")
	require.EqualValues(t, 2, edited["retry_count"])
	require.Equal(t, "by flags", edited["description"])
	editor = writeScript(t, `sed -i 's/^retry_count: .*/retry_count: 5/' "$1"`)
	r = c.inTerminal([]string{"EDITOR=" + editor}, "jobs", "edit", "cli-hello/hello", "-o", "json")
	require.Equal(t, 0, r.code, r.stdout)
	require.Contains(t, r.stdout, `"retry_count": 5`)
	require.Contains(t, r.stdout, `"description": "by flags"`, "what the editor left alone is kept")
	r = c.inTerminal([]string{"EDITOR=true"}, "jobs", "edit", "cli-hello/hello")
	require.Equal(t, 0, r.code, r.stdout)
	require.Contains(t, r.stdout, "nothing changed")
	racer := writeScript(t, fmt.Sprintf(`%q jobs edit cli-hello/hello --description "someone else" >/dev/null && sed -i 's/^retry_count: .*/retry_count: 7/' "$1"`, ringjobBinary(t)))
	r = c.inTerminal([]string{"EDITOR=" + racer}, "jobs", "edit", "cli-hello/hello")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stdout, "changed since you read it")
	kept := keptEdit(t, r.stdout)
	require.Contains(t, kept, "retry_count: 7", "a refused edit (412) is kept in the file the error names")
	c.json(&edited, "jobs", "get", "cli-hello/hello")
	require.EqualValues(t, 5, edited["retry_count"], "the refused edit changed nothing")
	require.Equal(t, "someone else", edited["description"])
	// A change the server finds invalid is kept too.
	bad := writeScript(t, `sed -i 's/^retry_count: .*/retry_count: -3/' "$1"`)
	r = c.inTerminal([]string{"EDITOR=" + bad}, "jobs", "edit", "cli-hello/hello")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stdout, "retry_count")
	require.Contains(t, keptEdit(t, r.stdout), "retry_count: -3")
	// A YAML syntax error is kept as before.
	broken := writeScript(t, `echo 'retry_count: [' >> "$1"`)
	r = c.inTerminal([]string{"EDITOR=" + broken}, "jobs", "edit", "cli-hello/hello")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, keptEdit(t, r.stdout), "retry_count: [")
	// Without a terminal the editor is refused, with what to do instead.
	r = c.runWith([]string{"EDITOR=" + editor}, "", "jobs", "edit", "cli-hello/hello")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "standard input is not a terminal; give the fields to change as flags")
	require.Empty(t, r.stdout)

	// start / stop.
	var started map[string]any
	c.json(&started, "jobs", "start", "cli-hello/hello")
	require.Equal(t, true, started["enabled"])
	require.NotNil(t, started["next_fire_at"])
	c.json(&started, "jobs", "stop", "cli-hello/hello")
	require.Equal(t, false, started["enabled"])

	// trigger: without --wait it answers the run; --wait exits with the
	// outcome; --follow prints the log as it comes, then the outcome.
	var run map[string]any
	c.json(&run, "jobs", "trigger", "cli-hello/hello", "--param", "from-cli")
	require.NotZero(t, num(run["id"]))
	r = c.run("jobs", "trigger", "cli-hello/hello", "--wait", "--param", "waited")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^\d+\s+cli-hello/hello\s+succeeded\s+manual`, r.stdout)
	r = c.run("jobs", "trigger", "cli-fail/fail", "--wait")
	require.Equal(t, 1, r.code, r.stdout)
	require.Regexp(t, `(?m)^\d+\s+cli-fail/fail\s+failed\s+manual`, r.stdout)
	require.Regexp(t, `run \d+ failed`, r.stderr)
	var failed map[string]any
	r = c.run("jobs", "trigger", "cli-fail/fail", "--wait", "-o", "json")
	require.Equal(t, 1, r.code)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &failed))
	require.Equal(t, "failed", failed["state"])
	r = c.run("jobs", "trigger", fmt.Sprint(num(talk["id"])), "--follow")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "one\ntwo\n", r.stdout)
	require.Contains(t, r.stderr, "succeeded")

	// runs: list, get, logs, logs --follow ending with the run, kill.
	var runs []map[string]any
	c.json(&runs, "runs", "list", "--job", "cli-fail/fail")
	require.Len(t, runs, 2)
	for _, x := range runs {
		require.Equal(t, "failed", x["state"])
	}
	c.json(&runs, "runs", "list", "--state", "succeeded", "--limit", "100")
	require.NotEmpty(t, runs)
	var got map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(c.ok("runs", "get", fmt.Sprint(num(run["id"])), "-o", "yaml")), &got))
	require.EqualValues(t, num(run["id"]), got["id"])
	require.Contains(t, c.ok("runs", "logs", fmt.Sprint(num(failed["id"]))), "failing")
	c.json(&run, "jobs", "trigger", "cli-talk/talk")
	start := time.Now()
	r = c.run("runs", "logs", "--follow", fmt.Sprint(num(run["id"])))
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "one\ntwo\n", r.stdout, "--follow printed the whole log and ended with the run")
	require.Less(t, time.Since(start), 30*time.Second)
	var got2 map[string]any
	c.json(&got2, "runs", "get", fmt.Sprint(num(run["id"])))
	require.Equal(t, "succeeded", got2["state"], "--follow ended when the run ended")
	c.json(&run, "jobs", "trigger", "cli-nap/nap")
	require.Eventually(t, func() bool {
		c.json(&got, "runs", "get", fmt.Sprint(num(run["id"])))
		return got["state"] == "running"
	}, 20*time.Second, 100*time.Millisecond)
	c.ok("runs", "kill", "--yes", fmt.Sprint(num(run["id"])))
	r = c.run("runs", "logs", "--follow", fmt.Sprint(num(run["id"])))
	require.Equal(t, 1, r.code, "a killed run is not a success: %s", r.stderr)
	require.Contains(t, r.stderr, "killed")

	// executors: the groups' members and the executors registered by
	// heartbeat; next-fires.
	c.ok("groups", "create", "cli-xxl", "--accept-registrations", "--executor-token", "cli-xxl-executor-token-0123456789")
	code, msg := xxlPost(t, s.base, "/api/registry", beat("cli-xxl", "http://127.0.0.1:9"), map[string]string{"XXL-JOB-ACCESS-TOKEN": "cli-xxl-executor-token-0123456789"})
	require.Equal(t, 200, code, msg)
	var execs []map[string]any
	c.json(&execs, "executors", "list")
	var addrs []string
	for _, e := range execs {
		addrs = append(addrs, fmt.Sprint(e["group"], " ", e["address"], " ", e["source"]))
	}
	require.Subset(t, addrs, []string{"cli-hello local://hello member", "cli-fail local://fail member", "cli-talk local://talk member",
		"cli-xxl http://127.0.0.1:9 registered"})
	require.Regexp(t, `(?m)^cli-xxl\s+http://127.0.0.1:9\s+registered\s+\S+\s+\d+s ago`, c.ok("executors", "list", "--group", "cli-xxl"))
	var nf struct {
		TimeZone string   `json:"time_zone"`
		Items    []string `json:"items"`
		Local    []string `json:"local"`
	}
	c.json(&nf, "next-fires", "0 0 3 * * ?", "--tz", "Asia/Tokyo", "-n", "3")
	require.Len(t, nf.Items, 3)
	require.Equal(t, "Asia/Tokyo", nf.TimeZone)
	require.True(t, strings.HasSuffix(nf.Local[0], "T03:00:00+09:00"), nf.Local[0])
	c.fails(1, "schedule_conf", "next-fires", "61 * * * * ?")

	// Shell completion: scripts for every shell, job names from the server.
	for _, sh := range []string{"bash", "zsh", "fish"} {
		require.Contains(t, c.ok("completion", sh), "ringjob")
	}
	comp := c.ok("__complete", "jobs", "get", "cli-")
	require.Contains(t, comp, "cli-hello/hello")
	require.Contains(t, comp, "cli-talk/talk")
	require.NotContains(t, c.ok("__complete", "jobs", "trigger", "cli-t"), "cli-hello/hello")
	require.Contains(t, c.ok("__complete", "groups", "get", ""), "cli-nap")
	require.Contains(t, c.ok("__complete", "context", "use", ""), "other")

	// Usage errors exit 2; help exits 0 and shows only the command's flags.
	for _, args := range [][]string{
		{"jobs", "get"}, {"jobs", "get", "a/b", "c/d"}, {"jobs", "list", "-o", "xml"}, {"runs", "get", "abc"},
		{"jobs", "frob"}, {"jobs", "get", "noslash"}, {"jobs", "trigger", "--no-such-flag", "a/b"}, {"login", "not-a-url"},
	} {
		r := c.run(args...)
		require.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
		require.NotEmpty(t, r.stderr)
	}
	h := c.ok("jobs", "trigger", "--help")
	require.Contains(t, h, "--wait")
	require.Contains(t, h, "--context")
	require.NotContains(t, h, "--listen")
	require.NotContains(t, h, "--database-url")
	require.Contains(t, c.ok("help", "runs", "logs"), "--follow")
	require.NotContains(t, c.ok("server", "--help"), "--context")

	// delete.
	require.Contains(t, c.ok("jobs", "delete", "cli-fail/fail"), "deleted job cli-fail/fail")
	c.fails(1, "does not exist", "jobs", "get", "cli-fail/fail")
	c.ok("groups", "delete", "cli-fail")
	c.fails(1, `no group with app name "cli-fail"`, "groups", "get", "cli-fail")
}

// inTerminal runs `ringjob args...` with a terminal (script(1)) as a person
// at a shell would, stdout and stderr both in the answer's stdout.
func (c *cli) inTerminal(env []string, args ...string) result {
	c.t.Helper()
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		c.t.Skip("SKIPPED: script(1) is not installed, so no terminal can be given to the CLI")
	}
	line := ringjobBinary(c.t)
	for _, a := range args {
		line += " '" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	cmd := exec.Command(scriptBin, "-qec", line, "/dev/null")
	cmd.Env = append(append([]string{}, c.env...), env...)
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(c.t, err)
	}
	return result{stdout: strings.ReplaceAll(string(out), "\r\n", "\n"), code: code}
}

// keptEdit reads the file an edit error says the edit is kept in.
func keptEdit(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`kept in (\S+?\.yaml)`).FindStringSubmatch(out)
	require.NotNil(t, m, "the error names the file with the edit: %s", out)
	b, err := os.ReadFile(m[1])
	require.NoError(t, err)
	return string(b)
}

func mustGroupID(t *testing.T, c *cli, app string) any {
	var g map[string]any
	c.json(&g, "groups", "get", app)
	return g["id"]
}

// writeScript writes an executable shell script (an $EDITOR).
func writeScript(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "editor.sh")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\nset -e\n"+body+"\n"), 0o700))
	return p
}
