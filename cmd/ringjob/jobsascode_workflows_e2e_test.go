package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
)

const etlYAML = `groups:
  - app_name: etl-wf
    members: [local://hello]
jobs:
  - group: etl-wf
    name: extract
  - group: etl-wf
    name: load
workflows:
  - group: etl-wf
    name: nightly
    description: extract then load
    block_strategy: DISCARD_LATER
    nodes:
      - name: extract
        job: extract
        params: "day={{ input.day }}"
      - name: load
        job: load
        retries: 2
    edges:
      - from: extract
        to: load
`

// workflowsOf lists by name the workflows of the group of a job, through
// the API.
func workflowsOf(t *testing.T, s *server, job string) map[string]map[string]any {
	t.Helper()
	code, j := getJob(t, s, job)
	require.Equal(t, 200, code)
	code, page := s.call("GET", "/api/v1/workflows?limit=200&group_id="+show(j["group_id"]), nil, nil)
	require.Equal(t, 200, code)
	out := map[string]map[string]any{}
	for _, it := range page["items"].([]any) {
		w := it.(map[string]any)
		out[w["name"].(string)] = w
	}
	return out
}

// TestWorkflowsAsCode applies, re-applies, updates, prunes and exports
// workflows declared with jobs, with the real binary against a real server.
func TestWorkflowsAsCode(t *testing.T) {
	t.Parallel()
	s := startServer(t, "sqlite://"+dbtest.SQLitePath(t), "rj_wfcode_admin_token_0123456789abcdef")
	work := t.TempDir()
	file := filepath.Join(work, "etl.yaml")
	writeFile(t, file, etlYAML)
	env := []string{"XDG_CONFIG_HOME=" + filepath.Join(work, "config"), "RINGJOB_URL=" + s.base, "RINGJOB_TOKEN=" + s.token}

	r := jac(t, env, "diff", "-f", file)
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stdout, "+ workflow etl-wf/nightly\n")
	require.Contains(t, r.stdout, "Plan: 4 to create, 0 to update, 0 to delete, 0 unchanged.")

	r = jac(t, env, "apply", "-f", file)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Applied: 4 created, 0 updated, 0 deleted.")
	w := workflowsOf(t, s, "etl-wf/load")["nightly"]
	require.NotNil(t, w)
	require.Equal(t, "DISCARD_LATER", w["block_strategy"])
	_, load := getJob(t, s, "etl-wf/load")
	nodes := w["definition"].(map[string]any)["nodes"].([]any)
	require.Len(t, nodes, 2)
	require.Equal(t, load["id"], nodes[1].(map[string]any)["job_id"], "node jobs are resolved by name")

	r = jac(t, env, "diff", "-f", file)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	r = jac(t, env, "apply", "-f", file)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Nothing to change.")

	t.Run("export round trip changes nothing", func(t *testing.T) {
		r := jac(t, env, "export", "--group", "etl-wf")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "workflows:")
		out := filepath.Join(work, "exported.yaml")
		writeFile(t, out, r.stdout)
		r = jac(t, env, "diff", "-f", out, "--prune")
		require.Equal(t, 0, r.code, r.stdout+r.stderr)
	})

	t.Run("sync copies workflows, their groups and node jobs mapped", func(t *testing.T) {
		prod := startServer(t, "sqlite://"+dbtest.SQLitePath(t), "rj_wfcode_prod_token_0123456789abcdef01")
		cfgDir := filepath.Join(work, "config", "ringjob")
		writeFile(t, filepath.Join(cfgDir, "config.yaml"), fmt.Sprintf("current_context: staging\ncontexts:\n"+
			"  - {name: staging, server: %s, token: %s}\n  - {name: prod, server: %s, token: %s}\n", s.base, s.token, prod.base, prod.token))
		require.NoError(t, os.Chmod(filepath.Join(cfgDir, "config.yaml"), 0o600))
		mapping := filepath.Join(work, "map.yaml")
		writeFile(t, mapping, "groups:\n  etl-wf: etl-prod\n")
		ctxEnv := []string{env[0]}
		r := jac(t, ctxEnv, "sync", "--from", "staging", "--to", "prod", "--map", mapping, "--group", "etl-wf")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "+ workflow etl-prod/nightly\n")
		w := workflowsOf(t, prod, "etl-prod/load")["nightly"]
		require.NotNil(t, w)
		_, load := getJob(t, prod, "etl-prod/load")
		require.Equal(t, load["id"], w["definition"].(map[string]any)["nodes"].([]any)[1].(map[string]any)["job_id"])
		r = jac(t, ctxEnv, "sync", "--from", "staging", "--to", "prod", "--map", mapping, "--group", "etl-wf")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "Nothing to change.")
	})

	// An edit is an update of that field, applied with the version read.
	writeFile(t, file, strings.Replace(etlYAML, "retries: 2", "retries: 3", 1))
	r = jac(t, env, "diff", "-f", file)
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stdout, "~ workflow etl-wf/nightly\n    nodes[1].retries: 2 -> 3\n")
	require.Contains(t, r.stdout, "Plan: 0 to create, 1 to update, 0 to delete, 3 unchanged.")
	r = jac(t, env, "apply", "-f", file)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Applied: 0 created, 1 updated, 0 deleted.")
	w = workflowsOf(t, s, "etl-wf/load")["nightly"]
	require.Equal(t, float64(3), w["definition"].(map[string]any)["nodes"].([]any)[1].(map[string]any)["retries"])

	// A node job neither in the files nor on the server: file:line, nothing applied.
	writeFile(t, file, strings.Replace(etlYAML, "job: load\n", "job: other/load\n", 1))
	r = jac(t, env, "apply", "-f", file)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "etl.yaml:19: nodes[1].job: job other/load is neither declared in these files nor on the server")

	// A node job that --prune would delete: file:line, nothing applied.
	writeFile(t, file, strings.Replace(strings.Replace(etlYAML, "job: load\n", "job: etl-wf/load\n", 1), "  - group: etl-wf\n    name: load\n", "", 1))
	r = jac(t, env, "apply", "-f", file, "--prune")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "etl.yaml:17: nodes[1].job: job etl-wf/load would be deleted by --prune")
	code, _ := getJob(t, s, "etl-wf/load")
	require.Equal(t, 200, code, "nothing was applied")

	// Without the workflow, --prune deletes it; without --prune it stays.
	noFlow, _, _ := strings.Cut(etlYAML, "workflows:")
	writeFile(t, file, noFlow)
	r = jac(t, env, "apply", "-f", file)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Nothing to change.")
	require.Len(t, workflowsOf(t, s, "etl-wf/load"), 1)
	r = jac(t, env, "apply", "-f", file, "--prune")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "- workflow etl-wf/nightly\n")
	require.Contains(t, r.stdout, "Applied: 0 created, 0 updated, 1 deleted.")
	require.Empty(t, workflowsOf(t, s, "etl-wf/load"))
}
