package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/apitypes"
)

// The counting must see a node run that never arrived, one that arrived
// twice and a node without an attempt; and measure the delay from the last
// parent's outcome.
func TestAnalyzeWorkflowsCountsMissingAndDuplicates(t *testing.T) {
	jobs := make([]int64, wfNodes)
	def := wfShape(jobs)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ts := func(d time.Duration) *string { s := t0.Add(d).Format(time.RFC3339Nano); return &s }
	var recs []record
	run := apitypes.WorkflowRun{ID: 1, State: "succeeded"}
	for i, n := range def.Nodes {
		id := int64(100 + i)
		run.Nodes = append(run.Nodes, apitypes.WorkflowNodeRun{Node: n.Name, Current: true, State: "succeeded", RunID: id,
			FinishedAt: ts(time.Duration(i) * time.Second)})
		recs = append(recs, record{Kind: kindArrival, C: id, D: t0.Add(time.Duration(i)*time.Second + 500*time.Millisecond).UnixNano()})
	}
	res := &wfResult{}
	analyzeWorkflows(res, []apitypes.WorkflowRun{run}, def, recs)
	require.Equal(t, 0, res.Missing)
	require.Equal(t, 0, res.Duplicates)
	require.Equal(t, 9, res.Delay.N) // every node but the head has parents

	// join (run 109) arrives twice; chain-3 (108) never; fan-0 has no attempt.
	recs = append(recs[:8:8], recs[9], recs[9])
	run.Nodes = run.Nodes[:1:1]
	for _, n := range []string{"fan-1", "fan-2", "fan-3", "chain-0", "chain-1", "chain-2", "chain-3", "join"} {
		for i, d := range def.Nodes {
			if d.Name == n {
				run.Nodes = append(run.Nodes, apitypes.WorkflowNodeRun{Node: n, Current: true, RunID: int64(100 + i), FinishedAt: ts(time.Duration(i) * time.Second)})
			}
		}
	}
	res = &wfResult{}
	analyzeWorkflows(res, []apitypes.WorkflowRun{run}, def, recs)
	require.Equal(t, 2, res.Missing)
	require.Equal(t, 1, res.Duplicates)
	require.Equal(t, 10, res.NodeRunsExp)
}
