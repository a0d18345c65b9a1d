package jobspec_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/client/jobspec"
)

const goodWorkflow = `jobs:
  - group: billing
    name: load
workflows:
  - group: billing
    name: nightly
    description: load then report
    schedule_type: cron
    schedule_conf: "0 0 3 * * ?"
    block_strategy: DISCARD_LATER
    nodes:
      - name: load
        job: load
        retries: 2
        params: "day={{ input.day }}"
      - name: report
        job: reports/weekly
        start_rule: all_finished
    edges:
      - from: load
        to: report
`

func TestParseReadsWorkflows(t *testing.T) {
	s, err := jobspec.Parse("wf.yaml", []byte(goodWorkflow))
	require.NoError(t, err)
	require.Len(t, s.Workflows, 1)
	w := s.Workflows[0]
	require.Equal(t, "billing/nightly", w.Ref())
	require.Equal(t, "DISCARD_LATER", w.BlockStrategy)
	require.Len(t, w.Nodes, 2)
	require.Equal(t, "billing/load", w.Nodes[0].Job, "a bare name is a job of the workflow's group")
	require.Equal(t, "day={{ input.day }}", *w.Nodes[0].Params)
	require.Nil(t, w.Nodes[1].Params, "no params: the job's own")
	require.Equal(t, "reports/weekly", w.Nodes[1].Job)
	require.Equal(t, []jobspec.WorkflowEdge{{From: "load", To: "report"}}, w.Edges)
	require.Equal(t, []string{"billing"}, s.GroupNames())

	// What export writes reads back the same.
	b, err := s.Marshal()
	require.NoError(t, err)
	back, err := jobspec.Parse("out.yaml", b)
	require.NoError(t, err, string(b))
	require.Empty(t, back.Workflows[0].Diff(w), string(b))
	require.Contains(t, string(b), "job: load\n", "node jobs of the same group are written by bare name")
}

func TestWorkflowProblemsNameFileAndLine(t *testing.T) {
	bad := `jobs:
  - group: billing
    name: load
workflows:
  - group: billing
    name: nightly
    colour: blue
    nodes:
      - name: a
        job: missing
      - name: b
        job: load
        start_rule: sometimes
    edges:
      - from: a
        to: c
  - group: billing
    name: nightly
    nodes:
      - name: a
        job: load
`
	_, err := jobspec.Parse("wf.yaml", []byte(bad))
	var ps jobspec.Problems
	require.ErrorAs(t, err, &ps)
	msg := err.Error()
	for _, want := range []string{
		"wf.yaml:7: colour: unknown field of a workflow",
		"wf.yaml:10: nodes[0].job: no job billing/missing is declared in these files",
		"wf.yaml:13: nodes[1].start_rule: unknown start rule \"sometimes\"",
		"wf.yaml:16: edges[0].to: no node is named \"c\"",
		"wf.yaml:17: name: workflow billing/nightly is declared twice (first at wf.yaml:5)",
	} {
		require.Contains(t, msg, want)
	}
	require.Len(t, strings.Split(msg, "\n"), 5, msg)
}

// The server's checks of a definition run when the file is read: a cycle
// and a template reading a node that is not upstream, at their lines.
func TestWorkflowDefinitionChecksAtTheirLines(t *testing.T) {
	bad := `workflows:
  - group: billing
    name: loop
    nodes:
      - {name: a, job: reports/x}
      - name: b
        job: reports/y
        params: "{{ nodes.c.output }}"
      - {name: c, job: reports/z}
    edges:
      - {from: a, to: b}
      - {from: b, to: a}
  - group: billing
    name: template
    nodes:
      - {name: a, job: reports/x}
      - name: b
        job: reports/y
        params: "{{ nodes.c.output }}"
      - {name: c, job: reports/z}
`
	_, err := jobspec.Parse("loop.yaml", []byte(bad))
	require.Error(t, err)
	require.Contains(t, err.Error(), "loop.yaml:10: edges: the edges make a cycle: ")
	require.Contains(t, err.Error(), "loop.yaml:19: nodes[1].params: {{ nodes.c.output }}: node \"c\" is not upstream of \"b\"")
}
