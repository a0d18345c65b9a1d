package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
)

// cliRun is one run of the ringjob binary as a user would type it.
type cliRun struct {
	stdout, stderr string
	code           int
}

// jac runs the real binary with env (KEY=VALUE) on top of a clean
// environment: its own config directory, no RINGJOB_* of the test's.
func jac(t *testing.T, env []string, args ...string) cliRun {
	t.Helper()
	cmd := exec.Command(ringjobBinary(t), args...)
	cmd.Env = cliEnv(env)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	t.Logf("ringjob %s -> %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
	return cliRun{stdout: out.String(), stderr: errb.String(), code: code}
}

func cliEnv(env []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RINGJOB_") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			out = append(out, kv)
		}
	}
	return append(out, env...)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// jobCount reads how many jobs a server has, through its API.
func jobCount(t *testing.T, s *server) int {
	t.Helper()
	n := 0
	cursor := ""
	for {
		code, page := s.call("GET", "/api/v1/jobs?limit=500&cursor="+cursor, nil, nil)
		require.Equal(t, 200, code)
		n += len(page["items"].([]any))
		cursor, _ = page["next_cursor"].(string)
		if cursor == "" {
			return n
		}
	}
}

func getJob(t *testing.T, s *server, ref string) (int, map[string]any) {
	t.Helper()
	app, name, _ := strings.Cut(ref, "/")
	return s.call("GET", "/api/v1/groups/"+app+"/jobs/"+name, nil, nil)
}

const billingYAML = `groups:
  - app_name: billing
    title: Billing
    members: [local://hello]
jobs:
  - group: billing
    name: close-books
    description: close the books every night
    schedule_type: cron
    schedule_conf: "0 0 2 * * ?"
    time_zone: Europe/Berlin
    handler: close
    params: '{"shards": 100}'
    route_strategy: failover
    block_strategy: DISCARD_LATER
    timeout_sec: 600
    retry_count: 2
    retry_backoff: exponential
    retry_delay_sec: 10
    retry_max_delay_sec: 300
    shard_count: 4
    max_in_flight: 8
    pinned_targets: [local://hello]
    children: [notify]
    enabled: true
  - group: billing
    name: notify
    description: tell finance
`

const reportsYAML = `groups:
  - app_name: reports
    members: [local://hello]
    accept_registrations: false
jobs:
  - group: reports
    name: weekly
    schedule_type: fixed_rate
    schedule_conf: 3600
    misfire_policy: fire_once_now
    children: [billing/notify]
`

// TestJobsAsCode runs export, apply, diff and sync with the real binary
// against real servers on MariaDB (two databases for sync).
func TestJobsAsCode(t *testing.T) {
	t.Parallel()
	staging := startServer(t, mysqlURL(t, dbtest.MySQL(t)), "rj_staging_admin_token_0123456789abcdef")
	prod := startServer(t, mysqlURL(t, dbtest.MySQL(t)), "rj_prod_admin_token_0123456789abcdef0123")
	work := t.TempDir()
	jobs := filepath.Join(work, "jobs")
	writeFile(t, filepath.Join(jobs, "billing.yaml"), billingYAML)
	writeFile(t, filepath.Join(jobs, "reports", "reports.yml"), reportsYAML)
	env := []string{"XDG_CONFIG_HOME=" + filepath.Join(work, "config"), "RINGJOB_URL=" + staging.base, "RINGJOB_TOKEN=" + staging.token}

	t.Run("diff shows what apply would do and exits 1", func(t *testing.T) {
		r := jac(t, env, "diff", "-f", jobs)
		require.Equal(t, 1, r.code, r.stderr)
		for _, want := range []string{"+ group billing", "+ group reports", "+ job billing/close-books", "+ job billing/notify", "+ job reports/weekly",
			"Plan: 5 to create, 0 to update, 0 to delete, 0 unchanged."} {
			require.Contains(t, r.stdout, want)
		}
	})

	t.Run("--dry-run changes nothing", func(t *testing.T) {
		r := jac(t, env, "apply", "-f", jobs, "--dry-run")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "Dry run: nothing was applied.")
		require.Equal(t, 0, jobCount(t, staging))
	})

	t.Run("apply, then nothing to change", func(t *testing.T) {
		r := jac(t, env, "apply", "-f", jobs)
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "Applied: 5 created, 0 updated, 0 deleted.")
		require.Equal(t, 3, jobCount(t, staging))
		code, j := getJob(t, staging, "billing/close-books")
		require.Equal(t, 200, code)
		require.Equal(t, true, j["enabled"])
		require.Equal(t, "DISCARD_LATER", j["block_strategy"])
		require.Equal(t, float64(4), j["shard_count"])
		_, notify := getJob(t, staging, "billing/notify")
		require.Equal(t, []any{notify["id"]}, j["child_job_ids"])

		r = jac(t, env, "diff", "-f", jobs)
		require.Equal(t, 0, r.code, r.stdout+r.stderr)
		r = jac(t, env, "apply", "-f", jobs)
		require.Equal(t, 0, r.code)
		require.Contains(t, r.stdout, "Nothing to change.")
	})

	t.Run("export round trip changes nothing", func(t *testing.T) {
		out := filepath.Join(work, "exported") + "/"
		r := jac(t, env, "export", "-o", out)
		require.Equal(t, 0, r.code, r.stderr)
		require.FileExists(t, filepath.Join(out, "billing.yaml"))
		require.FileExists(t, filepath.Join(out, "reports.yaml"))
		r = jac(t, env, "diff", "-f", out)
		require.Equal(t, 0, r.code, r.stdout)
		r = jac(t, env, "export", "--group", "billing")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "name: close-books")
		require.NotContains(t, r.stdout, "reports/weekly")
		one := filepath.Join(work, "one.yaml")
		writeFile(t, one, r.stdout)
		r = jac(t, env, "apply", "-f", one, "--group", "billing", "--prune")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "Nothing to change.")
	})

	t.Run("an edit is an update of that field", func(t *testing.T) {
		writeFile(t, filepath.Join(jobs, "billing.yaml"), strings.Replace(billingYAML, "description: tell finance", "description: tell finance and ops", 1))
		r := jac(t, env, "diff", "-f", jobs)
		require.Equal(t, 1, r.code)
		require.Contains(t, r.stdout, "~ job billing/notify\n    description: \"tell finance\" -> \"tell finance and ops\"\n")
		require.Contains(t, r.stdout, "Plan: 0 to create, 1 to update, 0 to delete, 4 unchanged.")
		r = jac(t, env, "apply", "-f", jobs)
		require.Equal(t, 0, r.code, r.stderr)
		_, j := getJob(t, staging, "billing/notify")
		require.Equal(t, "tell finance and ops", j["description"])
	})

	t.Run("--prune deletes undeclared jobs, only with --prune", func(t *testing.T) {
		_, g := staging.call("GET", "/api/v1/jobs?name=notify", nil, nil)
		gid := g["items"].([]any)[0].(map[string]any)["group_id"]
		code, _ := staging.call("POST", "/api/v1/jobs", map[string]any{"group_id": gid, "name": "by-hand"}, nil)
		require.Equal(t, 201, code)
		r := jac(t, env, "apply", "-f", jobs)
		require.Contains(t, r.stdout, "Nothing to change.")
		r = jac(t, env, "apply", "-f", jobs, "--prune", "--dry-run")
		require.Contains(t, r.stdout, "- job billing/by-hand")
		require.Equal(t, 4, jobCount(t, staging))
		r = jac(t, env, "apply", "-f", jobs, "--prune")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "Applied: 0 created, 0 updated, 1 deleted.")
		code, _ = getJob(t, staging, "billing/by-hand")
		require.Equal(t, 404, code)
	})

	t.Run("a failing document in the middle of a file changes nothing", func(t *testing.T) {
		bad := filepath.Join(work, "bad.yaml")
		writeFile(t, bad, `jobs:
  - group: billing
    name: first-new
---
jobs:
  - group: billing
    name: broken
    schedule_type: cron
    schedule_conf: "0 0 25 * * ?"
    retry_count: lots
    colour: blue
---
jobs:
  - group: billing
    name: last-new
`)
		before := jobCount(t, staging)
		r := jac(t, env, "apply", "-f", bad)
		require.Equal(t, 1, r.code)
		require.Contains(t, r.stderr, "bad.yaml:9: schedule_conf: ")
		require.Contains(t, r.stderr, "bad.yaml:10: retry_count: must be a whole number, got \"lots\"")
		require.Contains(t, r.stderr, "bad.yaml:11: colour: unknown field of a job")
		require.Contains(t, r.stderr, "3 problem(s); nothing was applied")
		require.Equal(t, before, jobCount(t, staging))

		// Problems only the server can see are placed in the file too.
		writeFile(t, bad, "jobs:\n  - group: billing\n    name: first-new\n  - group: billing\n    name: second-new\n    children: [billing/ghost]\n  - group: nowhere\n    name: x\n")
		r = jac(t, env, "apply", "-f", bad)
		require.Equal(t, 1, r.code)
		require.Contains(t, r.stderr, "bad.yaml:6: children[0]: job billing/ghost does not exist")
		require.Contains(t, r.stderr, "bad.yaml:7: app_name: group \"nowhere\" does not exist")
		require.Equal(t, before, jobCount(t, staging))
	})

	t.Run("an edit between plan and apply is refused, nothing changes", func(t *testing.T) {
		writeFile(t, filepath.Join(jobs, "billing.yaml"), strings.Replace(billingYAML, "timeout_sec: 600", "timeout_sec: 900", 1)+
			"  - group: billing\n    name: added-in-this-plan\n")
		cmd := exec.Command(ringjobBinary(t), "apply", "-f", jobs, "--confirm")
		cmd.Env = cliEnv(env)
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		rd := bufio.NewReader(stdout)
		var shown strings.Builder
		for !strings.Contains(shown.String(), "Apply this plan?") {
			b, err := rd.ReadByte()
			require.NoError(t, err, "plan so far: %s", shown.String())
			shown.WriteByte(b)
		}
		require.Contains(t, shown.String(), "~ job billing/close-books\n    timeout_sec: 600 -> 900")
		// Someone edits the job in the console meanwhile.
		code, _ := staging.call("PATCH", "/api/v1/groups/billing/jobs/close-books", map[string]any{"handler": "edited-meanwhile"}, nil)
		require.Equal(t, 200, code)
		before := jobCount(t, staging)
		_, err = io.WriteString(stdin, "yes\n")
		require.NoError(t, err)
		rest, _ := io.ReadAll(rd)
		err = cmd.Wait()
		require.Error(t, err, "stdout: %s", rest)
		require.Equal(t, 1, cmd.ProcessState.ExitCode())
		require.Contains(t, stderr.String(), "changed since plan: billing/close-books")
		require.Equal(t, 1, strings.Count(strings.TrimSpace(stderr.String()), "\n")+1, "one line: %s", stderr.String())
		require.Equal(t, before, jobCount(t, staging), "added-in-this-plan was not created")
		_, j := getJob(t, staging, "billing/close-books")
		require.Equal(t, float64(600), j["timeout_sec"])
		require.Equal(t, "edited-meanwhile", j["handler"])
		writeFile(t, filepath.Join(jobs, "billing.yaml"), strings.Replace(billingYAML, "description: tell finance", "description: tell finance and ops", 1))
		require.Equal(t, 0, jac(t, env, "apply", "-f", jobs).code)
	})

	t.Run("a token that may not edit a group fails before any change", func(t *testing.T) {
		_, reports := staging.call("GET", "/api/v1/groups?limit=500", nil, nil)
		var reportsID any
		for _, g := range reports["items"].([]any) {
			if g.(map[string]any)["app_name"] == "reports" {
				reportsID = g.(map[string]any)["id"]
			}
		}
		_, sa := staging.call("POST", "/api/v1/service-accounts", map[string]any{"name": "reports-ci"}, nil)
		code, _ := staging.call("POST", "/api/v1/role-bindings", map[string]any{"role": "owner", "group_id": reportsID, "principal_id": sa["id"]}, nil)
		require.Equal(t, 201, code)
		_, tok := staging.call("POST", "/api/v1/tokens", map[string]any{"name": "ci", "principal_id": sa["id"]}, nil)
		limited := []string{env[0], "RINGJOB_URL=" + staging.base, "RINGJOB_TOKEN=" + tok["token"].(string)}
		writeFile(t, filepath.Join(jobs, "reports", "reports.yml"), strings.Replace(reportsYAML, "schedule_conf: 3600", "schedule_conf: 7200", 1))
		writeFile(t, filepath.Join(jobs, "billing.yaml"), strings.Replace(billingYAML, "retry_count: 2", "retry_count: 3", 1))
		r := jac(t, limited, "apply", "-f", jobs)
		require.Equal(t, 1, r.code)
		require.Contains(t, r.stderr, "permission denied: missing groups.create", "a group it cannot read is one it would have to create: refused before anything could change")
		require.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, "one line: %s", r.stderr)
		_, w := getJob(t, staging, "reports/weekly")
		require.Equal(t, "3600", w["schedule_conf"], "its own group's change did not land either")
		r = jac(t, limited, "apply", "-f", filepath.Join(jobs, "reports"))
		require.Equal(t, 0, r.code, r.stderr)
		_, w = getJob(t, staging, "reports/weekly")
		require.Equal(t, "7200", w["schedule_conf"])
		require.Equal(t, 0, jac(t, env, "apply", "-f", jobs).code)
	})

	t.Run("unreachable server and refused token say so in one line", func(t *testing.T) {
		r := jac(t, []string{env[0], "RINGJOB_URL=http://127.0.0.1:1", "RINGJOB_TOKEN=x"}, "apply", "-f", jobs)
		require.Equal(t, 1, r.code)
		require.Contains(t, r.stderr, "cannot reach the server at http://127.0.0.1:1")
		require.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, r.stderr)
		r = jac(t, []string{env[0], "RINGJOB_URL=" + staging.base, "RINGJOB_TOKEN=rj_expired_or_revoked_token_000000000000"}, "diff", "-f", jobs)
		require.Equal(t, 2, r.code)
		require.Contains(t, r.stderr, "the server refused the token")
		require.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, r.stderr)
		require.Equal(t, 2, jac(t, env, "diff").code, "no -f is a usage error")
	})

	t.Run("sync between two servers with a mapping", func(t *testing.T) {
		cfgDir := filepath.Join(work, "config", "ringjob")
		writeFile(t, filepath.Join(cfgDir, "config.yaml"), fmt.Sprintf(`current_context: staging
contexts:
  - name: staging
    server: %s
    token: %s
  - name: prod
    server: %s
    token: %s
`, staging.base, staging.token, prod.base, prod.token))
		require.NoError(t, os.Chmod(filepath.Join(cfgDir, "config.yaml"), 0o600))
		mapping := filepath.Join(work, "prod-map.yaml")
		writeFile(t, mapping, "groups:\n  billing: billing-prod\ntargets:\n  \"local://hello\": \"local://env\"\n")
		ctxEnv := []string{env[0]}

		r := jac(t, ctxEnv, "sync", "--from", "staging", "--to", "prod", "--map", mapping, "--dry-run")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "Plan for context prod ("+prod.base+"):", "the plan names the server it is for")
		require.Contains(t, r.stdout, "+ job billing-prod/close-books")
		require.Equal(t, 0, jobCount(t, prod))

		r = jac(t, ctxEnv, "sync", "--from", "staging", "--to", "prod", "--map", mapping)
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "Applied: 5 created")
		code, j := getJob(t, prod, "billing-prod/close-books")
		require.Equal(t, 200, code)
		require.Equal(t, []any{"local://env"}, j["pinned_targets"])
		_, notify := getJob(t, prod, "billing-prod/notify")
		require.Equal(t, []any{notify["id"]}, j["child_job_ids"])
		_, weekly := getJob(t, prod, "reports/weekly")
		require.Equal(t, []any{notify["id"]}, weekly["child_job_ids"], "a child in a mapped group follows the mapping")

		r = jac(t, ctxEnv, "sync", "--from", "staging", "--to", "prod", "--map", mapping)
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "Nothing to change.")

		// A job that exists only in production goes with --prune, in the
		// synced group only.
		code, _ = prod.call("POST", "/api/v1/jobs", map[string]any{"group_id": j["group_id"], "name": "prod-only"}, nil)
		require.Equal(t, 201, code)
		r = jac(t, ctxEnv, "sync", "--from", "staging", "--to", "prod", "--map", mapping, "--group", "billing", "--prune")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "- job billing-prod/prod-only")
		require.Contains(t, r.stdout, "Applied: 0 created, 0 updated, 1 deleted.")

		// --stopped (or stopped: true in the destination's mapping file):
		// jobs new to prod arrive stopped; those it has stay as they are.
		_, books := getJob(t, staging, "billing/close-books")
		for _, name := range []string{"fresh-by-flag", "fresh-by-map"} {
			code, _ = staging.call("POST", "/api/v1/jobs", map[string]any{"group_id": books["group_id"], "name": name,
				"schedule_type": "cron", "schedule_conf": "0 0 3 * * ?", "enabled": true}, nil)
			require.Equal(t, 201, code)
		}
		code, _ = prod.call("POST", "/api/v1/groups/billing-prod/jobs/close-books/stop", nil, nil)
		require.Equal(t, 200, code)
		stoppedMap := filepath.Join(work, "prod-map-stopped.yaml")
		writeFile(t, stoppedMap, "stopped: true\ngroups:\n  billing: billing-prod\ntargets:\n  \"local://hello\": \"local://env\"\n")
		r = jac(t, ctxEnv, "sync", "--from", "staging", "--to", "prod", "--map", mapping, "--group", "billing", "--stopped")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "+ job billing-prod/fresh-by-flag")
		_, fresh := getJob(t, prod, "billing-prod/fresh-by-flag")
		require.Equal(t, false, fresh["enabled"], "--stopped: a new job arrives stopped though it runs on staging")
		_, cb := getJob(t, prod, "billing-prod/close-books")
		require.Equal(t, false, cb["enabled"], "--stopped does not start a job prod stopped, though staging runs it")
		code, _ = prod.call("POST", "/api/v1/groups/billing-prod/jobs/fresh-by-flag/start", nil, nil)
		require.Equal(t, 200, code)
		r = jac(t, ctxEnv, "sync", "--from", "staging", "--to", "prod", "--map", stoppedMap, "--group", "billing")
		require.Equal(t, 0, r.code, r.stderr)
		_, fresh = getJob(t, prod, "billing-prod/fresh-by-map")
		require.Equal(t, false, fresh["enabled"], "stopped: true in the mapping file is that destination's default")
		_, fresh = getJob(t, prod, "billing-prod/fresh-by-flag")
		require.Equal(t, true, fresh["enabled"], "a job prod started stays started")
		r = jac(t, ctxEnv, "sync", "--from", "staging", "--to", "prod", "--map", stoppedMap, "--group", "billing", "--stopped=false", "--dry-run")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "enabled: false -> true", "--stopped=false overrides the mapping file's default")

		// Errors say which server failed.
		writeFile(t, filepath.Join(cfgDir, "config.yaml"), fmt.Sprintf(`current_context: staging
contexts:
  - name: staging
    server: %s
    token: %s
  - name: down
    server: http://127.0.0.1:1
    token: x
`, staging.base, staging.token))
		r = jac(t, ctxEnv, "sync", "--from", "staging", "--to", "down", "--dry-run")
		require.Equal(t, 1, r.code)
		require.Contains(t, r.stderr, "context down (http://127.0.0.1:1)", "the error names the server that failed")
		r = jac(t, ctxEnv, "sync", "--from", "down", "--to", "staging", "--dry-run")
		require.Equal(t, 1, r.code)
		require.Contains(t, r.stderr, "read the jobs of context down (http://127.0.0.1:1)")
		r = jac(t, ctxEnv, "sync", "--from", "staging", "--to", "nosuch")
		require.Equal(t, 2, r.code, "an unknown context is a usage error")
		require.Contains(t, r.stderr, `--to: context "nosuch" is not in`)
	})
}
