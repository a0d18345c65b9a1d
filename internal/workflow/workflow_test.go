package workflow

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
)

func strp(s string) *string { return &s }

func def(nodes []Node, edges ...[2]string) Definition {
	d := Definition{Nodes: nodes}
	for _, e := range edges {
		d.Edges = append(d.Edges, Edge{From: e[0], To: e[1]})
	}
	return d
}

func n(name string, rule kind.StartRule) Node { return Node{Name: name, JobID: 1, StartRule: rule} }

func TestValidate(t *testing.T) {
	t.Parallel()
	jobs := func(ids []int64) (map[int64]bool, error) { return map[int64]bool{1: true}, nil }
	for _, tc := range []struct {
		name string
		d    Definition
		want string
	}{
		{"cycle named", def([]Node{n("a", ""), n("b", ""), n("c", "")}, [2]string{"a", "b"}, [2]string{"b", "c"}, [2]string{"c", "a"}),
			"edges: the edges make a cycle: a -> b -> c -> a"},
		{"unknown job by field", def([]Node{n("a", ""), {Name: "b", JobID: 7}}), "nodes[1].job_id: job 7 does not exist (or you may not see it)"},
		{"unknown edge end", def([]Node{n("a", "")}, [2]string{"a", "zz"}), `edges[0].to: no node is named "zz"`},
		{"bad rule", def([]Node{n("a", "sometimes")}), `nodes[0].start_rule: unknown start rule "sometimes"`},
		{"duplicate name", def([]Node{n("a", ""), n("a", "")}), `nodes[1].name: "a" is also the name of nodes[0]`},
		{"bad template", def([]Node{{Name: "a", JobID: 1, Params: strp("{{ env.HOME }}")}}), "nodes[0].params: {{ env.HOME }}: use {{ input.KEY }}, {{ nodes.NAME.output }} or {{ item }}"},
		{"output of a node not upstream", def([]Node{n("a", ""), {Name: "b", JobID: 1, Params: strp("{{ nodes.a.output }}")}}),
			`nodes[1].params: {{ nodes.a.output }}: node "a" is not upstream of "b"`},
		{"no nodes", Definition{}, "nodes: a workflow needs at least one node"},
		{"item without for_each", def([]Node{{Name: "a", JobID: 1, Params: strp("{{ item }}")}}), "nodes[0].params: {{ item }}: only a node with for_each has an item"},
		{"for_each not one template", def([]Node{{Name: "a", JobID: 1, ForEach: "[{{ input.x }}]"}}), "nodes[0].for_each"},
		{"shards and for_each", def([]Node{{Name: "a", JobID: 1, ForEach: "{{ input.x }}", Shards: 3}}), "nodes[0].for_each: a node fans out by shards or by for_each, not both"},
		{"too many shards", def([]Node{{Name: "a", JobID: 1, Shards: 101}}), "nodes[0].shards"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.d.Validate(jobs)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
	ok := def([]Node{n("a", ""), {Name: "b", JobID: 1, Params: strp(`{"day":"{{ input.date }}","rows":{{nodes.a.output}}}`)}}, [2]string{"a", "b"})
	require.NoError(t, ok.Validate(jobs))
	many := Definition{}
	for i := 0; i <= MaxNodes; i++ {
		many.Nodes = append(many.Nodes, Node{Name: "n" + string(rune('a'+i%26)) + string(rune('a'+i/26)), JobID: 1})
	}
	require.ErrorContains(t, many.Validate(nil), "nodes: 101 nodes: at most 100")
}

func TestEvaluateStartRules(t *testing.T) {
	t.Parallel()
	// p1, p2 -> c (rule under test)
	for _, tc := range []struct {
		rule   kind.StartRule
		p1, p2 kind.NodeState
		start  bool
		skip   bool
	}{
		{kind.StartAllSucceeded, kind.NodeSucceeded, kind.NodeSucceeded, true, false},
		{kind.StartAllSucceeded, kind.NodeSucceeded, kind.NodeRunning, false, false},
		{kind.StartAllSucceeded, kind.NodeFailed, kind.NodeRunning, false, true},
		{kind.StartAllSucceeded, kind.NodeSkipped, kind.NodeSucceeded, false, true},
		{kind.StartAllFinished, kind.NodeFailed, kind.NodeRunning, false, false},
		{kind.StartAllFinished, kind.NodeFailed, kind.NodeSkipped, true, false},
		{kind.StartAnySucceeded, kind.NodeSucceeded, kind.NodeRunning, true, false},
		{kind.StartAnySucceeded, kind.NodeFailed, kind.NodeRunning, false, false},
		{kind.StartAnySucceeded, kind.NodeFailed, kind.NodeSkipped, false, true},
		{kind.StartAnyFailed, kind.NodeFailed, kind.NodeRunning, true, false},
		{kind.StartAnyFailed, kind.NodeSucceeded, kind.NodeRunning, false, false},
		{kind.StartAnyFailed, kind.NodeSucceeded, kind.NodeSucceeded, false, true},
	} {
		d := def([]Node{n("p1", ""), n("p2", ""), n("c", tc.rule)}, [2]string{"p1", "c"}, [2]string{"p2", "c"})
		p := Evaluate(d.Graph(), map[string]kind.NodeState{"p1": tc.p1, "p2": tc.p2})
		require.Equal(t, tc.start, len(p.Start) == 1, "%s with %s, %s: start", tc.rule, tc.p1, tc.p2)
		_, skipped := p.Skip["c"]
		require.Equal(t, tc.skip, skipped, "%s with %s, %s: skip", tc.rule, tc.p1, tc.p2)
	}
}

func TestEvaluateSkipPropagationAndOutcome(t *testing.T) {
	t.Parallel()
	// a -> b -> c -> d(all_finished); a -> h(any_failed)
	d := def([]Node{n("a", ""), n("b", ""), n("c", ""), n("d", kind.StartAllFinished), n("h", kind.StartAnyFailed)},
		[2]string{"a", "b"}, [2]string{"b", "c"}, [2]string{"c", "d"}, [2]string{"a", "h"})
	g := d.Graph()
	p := Evaluate(g, nil)
	require.Equal(t, []string{"a"}, p.Start)
	p = Evaluate(g, map[string]kind.NodeState{"a": kind.NodeFailed})
	require.Equal(t, []string{"d", "h"}, p.Start, "d runs once its skipped parents end; h is the failure branch")
	require.Contains(t, p.Skip, "b")
	require.Contains(t, p.Skip, "c", "the skip propagates")
	p = Evaluate(g, map[string]kind.NodeState{"a": kind.NodeFailed, "b": kind.NodeSkipped, "c": kind.NodeSkipped, "d": kind.NodeSucceeded, "h": kind.NodeSucceeded})
	require.True(t, p.Done)
	require.Equal(t, kind.WorkflowSucceeded, p.Outcome, "a's failure was handled by h")
	// Without the failure branch the run fails.
	d2 := def([]Node{n("a", ""), n("b", "")}, [2]string{"a", "b"})
	p = Evaluate(d2.Graph(), map[string]kind.NodeState{"a": kind.NodeFailed})
	require.Equal(t, map[string]string{"b": "start rule all_succeeded can no longer be met (a failed)"}, p.Skip)
	require.True(t, p.Done, "the outcome counts the skips of the same plan")
	require.Equal(t, kind.WorkflowFailed, p.Outcome)
	p = Evaluate(d2.Graph(), map[string]kind.NodeState{"a": kind.NodeFailed, "b": kind.NodeSkipped})
	require.True(t, p.Done)
	require.Equal(t, kind.WorkflowFailed, p.Outcome)
	require.Contains(t, p.Message, "a")
}

func TestItems(t *testing.T) {
	t.Parallel()
	items, err := Items("{{ nodes.list.output }}", Values{Outputs: map[string]string{"list": `["a", 2, {"k":1}]`}})
	require.NoError(t, err)
	require.Len(t, items, 3)
	out, err := Render("day={{ item }}", Values{Item: items[0]})
	require.NoError(t, err)
	require.Equal(t, "day=a", out)
	_, err = Items("{{ input.x }}", Values{Input: map[string]json.RawMessage{"x": json.RawMessage(`"nope"`)}})
	require.ErrorContains(t, err, "is not a JSON array")
	big := "[" + strings.Repeat("1,", MaxFanOut) + "1]"
	_, err = Items("{{ nodes.l.output }}", Values{Outputs: map[string]string{"l": big}})
	require.ErrorContains(t, err, "at most 100")
}

func TestRender(t *testing.T) {
	t.Parallel()
	in, err := ParseInput(`{"date":"2026-01-02","n":3,"o":{"k":1}}`)
	require.NoError(t, err)
	out, err := Render(`{{input.date}} {{ input.n }} {{ input.o }} [{{ input.missing }}] {{ nodes.x.output }}`, Values{Input: in, Outputs: map[string]string{"x": "rows=7"}})
	require.NoError(t, err)
	require.Equal(t, `2026-01-02 3 {"k":1} [] rows=7`, out)
	_, err = Render("{{ input.date", Values{Input: in})
	require.Error(t, err)
	_, err = ParseInput("[1]")
	require.Error(t, err)
	var js json.RawMessage = []byte(`"x"`)
	require.Equal(t, "x", valueText(js))
}
