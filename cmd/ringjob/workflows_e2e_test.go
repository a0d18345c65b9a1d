package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
)

// TestWorkflowsCLI drives `ringjob workflows` against a real server on
// SQLite with local commands: a workflow from a YAML file, refused
// definitions named by field, a trigger with input params followed to its
// end, a failure branch, an unhandled failure marked succeeded, and the
// workflow metrics.
func TestWorkflowsCLI(t *testing.T) {
	t.Parallel()
	token := "cli-wf-token-0123456789abcdefghijklmnop"
	s := startServer(t, "sqlite://"+dbtest.SQLitePath(t), token)
	c := newCLI(t, s)
	r := c.runWith(nil, token+"\n", "login", s.base, "--token-stdin", "--name", "local")
	require.Equal(t, 0, r.code, r.stderr)
	c.ok("groups", "create", "wf-ok", "--member", "local://hello")
	c.ok("groups", "create", "wf-fail", "--member", "local://fail")
	jobID := func(ref string) int64 {
		var j map[string]any
		c.json(&j, "jobs", "get", ref)
		return num(j["id"])
	}
	c.ok("jobs", "create", "wf-ok/hello", "--schedule-type", "none")
	c.ok("jobs", "create", "wf-fail/fail", "--schedule-type", "none")
	hello, fail := jobID("wf-ok/hello"), jobID("wf-fail/fail")
	var g map[string]any
	c.json(&g, "groups", "get", "wf-ok")
	group := num(g["id"])

	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	good := write("etl.yaml", fmt.Sprintf(`group_id: %d
name: etl
definition:
  nodes:
    - {name: extract, job_id: %d, params: "day={{ input.day }}"}
    - {name: load, job_id: %d, params: "got {{ nodes.extract.output }}"}
    - {name: check, job_id: %d}
    - {name: on-failure, job_id: %d, start_rule: any_failed, params: "check failed"}
  edges:
    - {from: extract, to: load}
    - {from: check, to: on-failure}
`, group, hello, hello, fail, hello))
	var w map[string]any
	c.json(&w, "workflows", "create", "-f", good)
	wid := fmt.Sprint(num(w["id"]))
	require.Contains(t, c.ok("workflows", "list"), "etl")

	// Refused definitions say which field, and change nothing.
	cyc := write("cycle.yaml", fmt.Sprintf(`group_id: %d
name: cyc
definition:
  nodes: [{name: a, job_id: %d}, {name: b, job_id: %d}]
  edges: [{from: a, to: b}, {from: b, to: a}]
`, group, hello, hello))
	c.fails(1, "the edges make a cycle: a -> b -> a", "workflows", "create", "-f", cyc)
	unknown := write("unknown.yaml", fmt.Sprintf(`group_id: %d
name: unknown
definition: {nodes: [{name: a, job_id: 999999}]}
`, group))
	c.fails(1, "definition.nodes[0].job_id: job 999999 does not exist", "workflows", "create", "-f", unknown)
	badTmpl := write("tmpl.yaml", fmt.Sprintf(`group_id: %d
name: tmpl
definition: {nodes: [{name: a, job_id: %d, params: "{{ nodes.b.output }}"}, {name: b, job_id: %d}]}
`, group, hello, hello))
	c.fails(1, `definition.nodes[0].params: {{ nodes.b.output }}: node "b" is not upstream of "a"`, "workflows", "create", "-f", badTmpl)
	require.NotContains(t, c.ok("workflows", "list"), "cyc")

	// Trigger with input params and follow to the end: check fails, its
	// failure branch runs, so the run succeeds.
	out := c.ok("workflows", "trigger", wid, "--input", "day=mon", "--follow", "--poll", "100ms")
	require.Contains(t, out, "check: failed")
	require.Contains(t, out, "on-failure: succeeded")
	require.Regexp(t, `workflow run \d+ succeeded`, out)
	var runs []map[string]any
	c.json(&runs, "workflows", "runs", "--workflow", wid)
	require.Len(t, runs, 1)
	runID := fmt.Sprint(num(runs[0]["id"]))
	var run map[string]any
	c.json(&run, "workflows", "run", runID)
	outputs := map[string]string{}
	for _, n := range run["nodes"].([]any) {
		n := n.(map[string]any)
		outputs[n["node"].(string)] = n["output"].(string)
	}
	// local://hello is `echo "hello from e2e," "params: {params}"`: its
	// last stdout line is its output.
	require.Equal(t, "hello from e2e, params: day=mon", outputs["extract"])
	require.Equal(t, "hello from e2e, params: got hello from e2e, params: day=mon", outputs["load"])

	// Names stand for ids in a file (group: APP, job: GROUP/NAME) and on
	// the command line (GROUP/NAME); a name not found names its field.
	c.fails(1, "definition.nodes[0].job wf-ok/nope", "workflows", "create", "-f", write("nope.yaml", `group: wf-ok
name: nope
definition: {nodes: [{name: a, job: wf-ok/nope}]}
`))
	// Without the failure branch the run fails (exit 1); marking the
	// failed node succeeded lets what depends on it run.
	plain := write("plain.yaml", `group: wf-ok
name: plain
definition:
  nodes: [{name: check, job: wf-fail/fail}, {name: after, job: wf-ok/hello}]
  edges: [{from: check, to: after}]
`)
	c.json(&w, "workflows", "create", "-f", plain)
	require.Equal(t, group, num(w["group_id"]))
	require.Equal(t, float64(fail), w["definition"].(map[string]any)["nodes"].([]any)[0].(map[string]any)["job_id"])
	r = c.run("workflows", "trigger", "wf-ok/plain", "--follow", "--poll", "100ms")
	require.Equal(t, exitFailure, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "after: skipped")
	require.Regexp(t, `workflow run \d+ failed: failed without a failure branch: check`, r.stdout)
	failedID := regexp.MustCompile(`workflow run (\d+) failed`).FindStringSubmatch(r.stdout)[1]
	c.fails(1, "cannot be retried or marked", "workflows", "mark-succeeded", failedID, "after")
	c.ok("workflows", "mark-succeeded", failedID, "check")
	out = c.ok("workflows", "run", failedID, "--follow", "--poll", "100ms")
	require.Contains(t, out, "after: succeeded")
	require.Contains(t, out, "succeeded")

	resp, err := http.Get(s.base + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(body), `ringjob_workflow_runs_total{state="succeeded"} 2`)
	require.Contains(t, string(body), `ringjob_workflow_runs_total{state="failed"} 1`)
	m := regexp.MustCompile(`(?m)^ringjob_workflow_node_start_delay_seconds_count (\d+)`).FindStringSubmatch(string(body))
	require.NotNil(t, m, "metrics:\n%s", body)
	require.NotEqual(t, "0", m[1])
	require.True(t, strings.Contains(string(body), "ringjob_workflow_node_start_delay_seconds_bucket"))
}
