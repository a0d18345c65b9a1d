package web_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestWorkflowPagesInBrowser: a group owner finds a workflow in the list,
// sees its graph, is told in the editor what is wrong with a definition
// (not JSON; a cycle, refused by the server naming it), runs it with input
// params and watches its nodes reach their states on the run's graph: the
// failure branch skipped, the rest succeeded.
func TestWorkflowPagesInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test starts a server and chromium; skipped with -short")
	}
	chromium := chromiumPath()
	if chromium == "" {
		t.Skip("SKIPPED: chromium is not installed, so the console's browser test cannot run (apt-get install chromium; CI installs it)")
	}
	srv := startRingjob(t)
	group := srv.call("POST", "groups", map[string]any{"app_name": "wf-console", "title": "Workflows", "members": []string{"local://quick"}})
	gid := group["id"]
	job := func(name string) any {
		return srv.call("POST", "jobs", map[string]any{"group_id": gid, "name": name, "schedule_type": "none"})["id"]
	}
	extract, load, report, alert := job("extract"), job("load"), job("report"), job("alert")
	wf := srv.call("POST", "workflows", map[string]any{"group_id": gid, "name": "nightly", "description": "extract, load, report",
		"definition": map[string]any{
			"nodes": []map[string]any{
				{"name": "extract", "job_id": extract},
				{"name": "load", "job_id": load, "params": "{{ input.day }}"},
				{"name": "report", "job_id": report},
				{"name": "alert", "job_id": alert, "start_rule": "any_failed"},
			},
			"edges": []map[string]any{{"from": "extract", "to": "load"}, {"from": "load", "to": "report"}, {"from": "load", "to": "alert"}},
		}})
	wid := wf["id"]
	owner := srv.call("POST", "users", map[string]any{"name": "wanda", "password": "owner-password-1234"})
	srv.call("POST", "role-bindings", map[string]any{"role": "owner", "group_id": gid, "principal_id": owner["id"]})

	ctx := browser(t, chromium)
	run(t, ctx, "sign in",
		chromedp.Navigate(srv.base+"/#/login"),
		chromedp.WaitVisible("#username", chromedp.ByQuery),
		chromedp.SendKeys("#username", "wanda", chromedp.ByQuery),
		chromedp.SendKeys("#password", "owner-password-1234", chromedp.ByQuery),
		chromedp.Click("#signin", chromedp.ByQuery),
		chromedp.WaitVisible("#tile-jobs", chromedp.ByQuery),
	)

	var listed string
	var nodes int
	var edges int
	run(t, ctx, "the list and the graph",
		chromedp.Navigate(srv.base+"/#/workflows"),
		chromedp.WaitVisible(fmt.Sprintf(`tr[data-workflow="%v"] a`, wid), chromedp.ByQuery),
		chromedp.Text(fmt.Sprintf(`tr[data-workflow="%v"] a`, wid), &listed, chromedp.ByQuery),
		chromedp.Click(fmt.Sprintf(`tr[data-workflow="%v"] a`, wid), chromedp.ByQuery),
		chromedp.WaitVisible("#workflow-graph svg", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("#workflow-graph .dag-node").length`, &nodes),
		chromedp.Evaluate(`document.querySelectorAll("#workflow-graph .dag-edge").length`, &edges),
		screenshot("workflow-page"),
	)
	require.Equal(t, "wf-console/nightly", listed)
	require.Equal(t, 4, nodes)
	require.Equal(t, 3, edges)
	checkA11y(t, ctx, "workflow")

	var problem, flashText string
	var previewNodes int
	run(t, ctx, "the editor draws as it is typed and shows the server's refusal",
		chromedp.Navigate(fmt.Sprintf("%s/#/workflows/%v/edit", srv.base, wid)),
		chromedp.WaitVisible("#workflow-preview svg", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("#workflow-preview .dag-node").length`, &previewNodes),
		chromedp.Evaluate(`(() => { const t = document.querySelector("#workflow-json"); t.value = t.value.replace('"definition"', '"definition" oops'); t.dispatchEvent(new Event("input")); return true; })()`, nil),
		chromedp.Poll(`(document.querySelector("#workflow-json-problem")?.textContent ?? "") || false`, &problem),
		chromedp.Evaluate(`(() => { const t = document.querySelector("#workflow-json"); const w = JSON.parse(t.value.replace('"definition" oops', '"definition"'));
			w.definition.edges.push({from: "report", to: "extract"}); t.value = JSON.stringify(w, null, 2); t.dispatchEvent(new Event("input")); return true; })()`, nil),
		screenshot("workflow-editor"),
		chromedp.Click("#save-workflow", chromedp.ByQuery),
		chromedp.Poll(`(() => { const f = document.querySelector("#flash"); return !f.hidden && f.textContent; })()`, &flashText),
	)
	require.Equal(t, 4, previewNodes)
	require.Contains(t, problem, "Not drawn")
	require.Contains(t, flashText, "cycle", "the server's refusal names the cycle")

	var state string
	var nodeStates map[string]string
	run(t, ctx, "run it and watch the nodes",
		chromedp.Navigate(fmt.Sprintf("%s/#/workflows/%v", srv.base, wid)),
		chromedp.WaitVisible("#trigger-input", chromedp.ByQuery),
		clearInput("#trigger-input"),
		chromedp.SendKeys("#trigger-input", `{"day": "2026-11-28"}`, chromedp.ByQuery),
		chromedp.Click("#trigger-workflow", chromedp.ByQuery),
		chromedp.WaitVisible("#workflow-run-graph svg", chromedp.ByQuery),
		chromedp.Poll(`(() => { const s = document.querySelector("#workflow-run-state"); return s && ["succeeded", "failed", "cancelled", "timed_out"].includes(s.textContent) && s.textContent; })()`, &state),
		chromedp.Evaluate(`Object.fromEntries([...document.querySelectorAll("#workflow-run-graph .dag-node")].map((g) => [g.dataset.node, g.querySelector(".dag-sub").textContent]))`, &nodeStates),
		screenshot("workflow-run"),
	)
	require.Equal(t, "succeeded", state)
	require.Equal(t, map[string]string{"extract": "succeeded", "load": "succeeded", "report": "succeeded", "alert": "skipped"}, nodeStates)
	checkA11y(t, ctx, "workflow run")
}
