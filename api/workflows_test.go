package api_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/store"
)

// The workflow routes: bad input is refused naming its field and changes
// nothing; a trigger's Idempotency-Key finds the earlier run (201, then
// 200); a cancel is accepted once (202, then 409); writes are audited.
func TestWorkflowsAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", setupOpts{noSched: true})
	ctx := context.Background()
	gid := b.group("wf-api", "local://echo")
	j := b.job(map[string]any{"group_id": gid, "name": "step"})
	body := func(name string, nodes ...map[string]any) map[string]any {
		ns := []any{}
		for _, n := range nodes {
			ns = append(ns, n)
		}
		return map[string]any{"group_id": gid, "name": name, "definition": map[string]any{"nodes": ns,
			"edges": []any{map[string]any{"from": "a", "to": "b"}}}}
	}
	node := func(name string, extra ...any) map[string]any {
		n := map[string]any{"name": name, "job_id": id(j)}
		for i := 0; i+1 < len(extra); i += 2 {
			n[extra[i].(string)] = extra[i+1]
		}
		return n
	}
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{body("bad-rule", node("a"), node("b", "start_rule", "sometimes")), "definition.nodes[1].start_rule"},
		{body("bad-job", node("a"), node("b", "job_id", 424242)), "definition.nodes[1].job_id"},
		{body("bad-edge", node("a")), "definition.edges[0].to"},
		{body("bad-tmpl", node("a", "params", "{{ nodes.b.output }}"), node("b")), "definition.nodes[0].params"},
		{map[string]any{"group_id": gid, "name": "no-nodes", "definition": map[string]any{"nodes": []any{}}}, "definition.nodes"},
		{map[string]any{"group_id": gid, "name": "bad-block", "block_strategy": "SOMETIMES", "definition": map[string]any{"nodes": []any{node("a")}}}, "block_strategy"},
	} {
		r := b.call("POST", "/api/v1/workflows", tc.body)
		require.Equal(t, 400, r.Status, "%s", r.Body)
		_, field, _ := r.errCode(t)
		require.Equal(t, tc.field, field, "%s", r.Body)
	}
	ws, err := b.st.WorkflowList(ctx, store.WorkflowListParams{Limit: 10})
	require.NoError(t, err)
	require.Empty(t, ws, "a refused workflow is not stored")

	w := b.must(201, "POST", "/api/v1/workflows", body("ok", node("a", "params", "{{ input.day }}"), node("b")))
	path := fmt.Sprintf("/api/v1/workflows/%d", id(w))
	r := b.call("POST", path+"/trigger", map[string]any{"input": map[string]any{"day": "mon"}}, "Idempotency-Key", "k-1")
	require.Equal(t, 201, r.Status, "%s", r.Body)
	run := r.JSON(t)
	require.Equal(t, "queued", run["state"])
	require.Equal(t, map[string]any{"day": "mon"}, run["input"])
	r = b.call("POST", path+"/trigger", nil, "Idempotency-Key", "k-1")
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, id(run), id(r.JSON(t)), "the key finds the earlier run")
	r = b.call("DELETE", path, nil)
	require.Equal(t, 409, r.Status, "a workflow with a queued run is not deleted: %s", r.Body)

	runPath := fmt.Sprintf("/api/v1/workflow-runs/%d", id(run))
	got := b.must(200, "GET", runPath, nil)
	require.Len(t, got["definition"].(map[string]any)["nodes"], 2, "the run keeps the definition it started with")
	r = b.call("POST", runPath+"/cancel", nil)
	require.Equal(t, 202, r.Status, "%s", r.Body)
	require.Equal(t, true, r.JSON(t)["cancel_requested"])
	r = b.call("POST", runPath+"/nodes/a/retry", nil)
	require.Equal(t, 409, r.Status, "a node that did not fail is not retried: %s", r.Body)
	r = b.call("POST", runPath+"/nodes/zz/retry", nil)
	require.Equal(t, 400, r.Status, "%s", r.Body)

	events, err := b.st.AuditList(ctx, store.AuditListParams{Limit: 100})
	require.NoError(t, err)
	acts := map[string]bool{}
	for _, e := range events {
		acts[e.Action] = true
	}
	for _, a := range []string{"workflow.create", "workflow.trigger", "workflow_run.cancel"} {
		require.True(t, acts[a], "audit has %s: %v", a, acts)
	}
}
