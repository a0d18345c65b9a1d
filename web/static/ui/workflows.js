// Workflows: the list, a workflow's page (its DAG, runs and a trigger
// form), the editor (the definition as JSON with a live drawing), and a
// workflow run with its nodes' states drawn live.
import { call, get, post, query } from "./api.js";
import { can, describe, duration, flash, flashNext, h, stateBadge, visit, when } from "./core.js";

const finalRun = ["succeeded", "failed", "cancelled", "timed_out"];
const startRules = ["all_succeeded", "all_finished", "any_succeeded", "any_failed"];

// ---- the DAG drawing: SVG, layered by longest path from the roots

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null) el.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// layers places each node in the layer after its deepest parent; a cycle
// (refused by the server, possible while editing) leaves its nodes in
// layer 0 rather than looping.
function layers(def) {
  const names = def.nodes.map((n) => n.name);
  const parents = new Map(names.map((n) => [n, []]));
  for (const e of def.edges || []) if (parents.has(e.to) && parents.has(e.from)) parents.get(e.to).push(e.from);
  const depth = new Map();
  const visiting = new Set();
  const of = (n) => {
    if (depth.has(n)) return depth.get(n);
    if (visiting.has(n)) return 0;
    visiting.add(n);
    const d = Math.max(-1, ...parents.get(n).map(of)) + 1;
    visiting.delete(n);
    depth.set(n, d);
    return d;
  };
  names.forEach(of);
  const byLayer = [];
  for (const n of names) (byLayer[depth.get(n)] ||= []).push(n);
  return byLayer.map((l) => l || []);
}

// drawDAG draws def; stateOf(name) gives a node's state (a CSS class and
// a label under its name), label(node) a second line.
export function drawDAG(def, stateOf, label) {
  const W = 170, H = 46, GX = 60, GY = 18;
  const ls = layers(def);
  const pos = new Map();
  ls.forEach((layer, x) => layer.forEach((name, y) => pos.set(name, { x: 10 + x * (W + GX), y: 10 + y * (H + GY) })));
  const width = 20 + Math.max(1, ls.length) * (W + GX) - GX;
  const height = 20 + Math.max(1, ...ls.map((l) => l.length)) * (H + GY) - GY;
  const edges = (def.edges || []).filter((e) => pos.has(e.from) && pos.has(e.to)).map((e) => {
    const a = pos.get(e.from), b = pos.get(e.to);
    const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2;
    const mx = (x1 + x2) / 2;
    return svg("path", { class: "dag-edge", d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2 - 6},${y2}`, "marker-end": "url(#dag-arrow)",
      "data-from": e.from, "data-to": e.to });
  });
  const nodes = def.nodes.filter((n) => pos.has(n.name)).map((n) => {
    const p = pos.get(n.name);
    const state = stateOf ? stateOf(n.name) : "";
    return svg("g", { class: "dag-node " + (state || ""), "data-node": n.name, transform: `translate(${p.x},${p.y})` },
      svg("title", {}, `${n.name}${state ? ": " + state : ""}`),
      svg("rect", { width: W, height: H, rx: 6 }),
      svg("text", { x: 10, y: 19, class: "dag-name" }, n.name.length > 22 ? n.name.slice(0, 21) + "…" : n.name),
      svg("text", { x: 10, y: 36, class: "dag-sub" }, state || (label ? label(n) : "")));
  });
  return svg("svg", { class: "dag", role: "img", "aria-label": `Workflow graph: ${def.nodes.length} nodes, ${(def.edges || []).length} edges`,
    width, height, viewBox: `0 0 ${width} ${height}` },
    svg("defs", {}, svg("marker", { id: "dag-arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
      svg("path", { d: "M0,0 L10,5 L0,10 z", class: "dag-arrowhead" }))),
    edges, nodes);
}

// jobNames reads the names of the jobs a definition runs ("app/name"),
// for labels; a job the user may not read keeps its id.
async function jobNames(def) {
  const names = new Map();
  await Promise.all([...new Set(def.nodes.map((n) => n.job_id))].map(async (id) => {
    try {
      const j = await get(`jobs/${id}`);
      names.set(id, `${j.app_name || ""}/${j.name}`.replace(/^\//, ""));
    } catch { names.set(id, `job ${id}`); }
  }));
  return names;
}

// ---- list

async function workflowsPage() {
  const v = visit();
  const [page, groups] = await Promise.all([get("workflows" + query({ limit: 200 })), get("groups" + query({ limit: 500 }))]);
  const app = new Map(groups.items.map((g) => [g.id, g.app_name]));
  const rows = page.items.map((w) => h("tr", { "data-workflow": w.id },
    h("td", {}, h("a", { href: `#/workflows/${w.id}` }, `${app.get(w.group_id) || w.group_id}/${w.name}`)),
    h("td", {}, String(w.definition.nodes.length)),
    h("td", {}, w.schedule_type === "none" ? "by hand" : `${w.schedule_type} ${w.schedule_conf}`),
    h("td", { class: "optional" }, w.enabled ? when(w.next_fire_at) : "stopped")));
  v.render(h("h1", {}, "Workflows"),
    h("p", {}, "A workflow runs jobs as the nodes of a graph: each node starts when its start rule is met by its parents' outcomes."),
    groups.items.some((g) => can("jobs.write", g.id)) ? h("div", { class: "actions" }, h("a", { class: "button", href: "#/workflows/new", id: "new-workflow" }, "New workflow")) : null,
    h("div", { class: "table-wrap" }, h("table", { id: "workflows" },
      h("thead", {}, h("tr", {}, ["Workflow", "Nodes", "Schedule", "Next start"].map((c, i) => h("th", { scope: "col", class: i >= 3 ? "optional" : null }, c)))),
      h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 4 }, "No workflows yet."))))));
}

// ---- a workflow's page

async function workflowPage(id) {
  const v = visit();
  const w = await get(`workflows/${id}`);
  const [names, runs, group] = await Promise.all([jobNames(w.definition), get("workflow-runs" + query({ workflow_id: id, limit: 20 })), get(`groups/${w.group_id}`)]);
  const input = h("textarea", { id: "trigger-input", rows: 3, cols: 50, "aria-describedby": "trigger-hint" }, "{}");
  const key = h("input", { id: "trigger-key", type: "text", size: 30 });
  const trigger = h("form", { id: "trigger-form", onsubmit: async (ev) => {
    ev.preventDefault();
    let body;
    try { body = { input: JSON.parse(input.value || "{}") }; } catch (e) { flash("Input params: not JSON: " + e.message, "error"); return; }
    try {
      const headers = key.value.trim() ? { "Idempotency-Key": key.value.trim() } : {};
      const run = await call("POST", `workflows/${id}/trigger`, body, headers);
      flashNext(`Workflow run #${run.id} started.`, "ok");
      location.hash = `#/workflow-runs/${run.id}`;
    } catch (e) { flash(describe(e), "error"); }
  } },
    h("h2", {}, "Run it now"),
    h("label", { for: "trigger-input" }, "Input params (JSON object)"), input,
    h("p", { class: "hint", id: "trigger-hint" }, "Node params read them as {{ input.KEY }}."),
    h("label", { for: "trigger-key" }, "Idempotency key (optional)"), key,
    h("div", { class: "actions" }, h("button", { type: "submit", id: "trigger-workflow" }, "Run")));
  const runRows = runs.items.map((r) => h("tr", { "data-workflow-run": r.id },
    h("td", {}, h("a", { href: `#/workflow-runs/${r.id}` }, `#${r.id}`)),
    h("td", {}, stateBadge(r.state)),
    h("td", {}, r.trigger_type),
    h("td", {}, when(r.started_at || r.created_at)),
    h("td", { class: "optional" }, duration(r.started_at, r.finished_at))));
  v.render(h("h1", {}, `${group.app_name}/${w.name}`),
    w.description ? h("p", {}, w.description) : null,
    h("dl", { class: "kv", id: "workflow-details" },
      h("dt", {}, "Schedule"), h("dd", {}, w.schedule_type === "none" ? "by hand or by API" : `${w.schedule_type} ${w.schedule_conf} (${w.time_zone})`),
      h("dt", {}, "State"), h("dd", {}, w.enabled ? `started; next start ${when(w.next_fire_at)}` : "stopped"),
      w.active_from || w.active_until ? [h("dt", {}, "Active window"), h("dd", {}, `${w.active_from ? when(w.active_from) : "open"} – ${w.active_until ? when(w.active_until) : "open"}`)] : null,
      h("dt", {}, "Overlapping runs"), h("dd", {}, w.block_strategy),
      h("dt", {}, "Timeout"), h("dd", {}, w.timeout_sec ? `${w.timeout_sec} s` : "none")),
    h("h2", {}, "Graph"),
    h("div", { class: "dag-wrap", id: "workflow-graph" }, drawDAG(w.definition, null, (n) => names.get(n.job_id) + (n.start_rule && n.start_rule !== "all_succeeded" ? ` · ${n.start_rule}` : ""))),
    can("jobs.write", w.group_id) ? h("div", { class: "actions" }, h("a", { class: "button secondary", href: `#/workflows/${id}/edit`, id: "edit-workflow" }, "Edit")) : null,
    can("jobs.operate", w.group_id) ? trigger : null,
    h("h2", {}, "Recent runs"),
    h("div", { class: "table-wrap" }, h("table", { id: "workflow-runs" },
      h("thead", {}, h("tr", {}, ["Run", "State", "Trigger", "Started", "Took"].map((c, i) => h("th", { scope: "col", class: i >= 4 ? "optional" : null }, c)))),
      h("tbody", {}, runRows.length ? runRows : h("tr", {}, h("td", { colspan: 5 }, "No runs yet."))))));
}

// ---- the editor: the workflow as JSON, drawn as it is typed

async function editorPage(id) {
  const v = visit();
  const groups = (await get("groups" + query({ limit: 500 }))).items.filter((g) => can("jobs.write", g.id));
  let w = { group_id: groups.length ? groups[0].id : 0, name: "", description: "", definition: { nodes: [{ name: "first", job_id: 0 }], edges: [] },
    schedule_type: "none", schedule_conf: "", time_zone: "UTC", block_strategy: "SERIAL_EXECUTION", timeout_sec: 0 };
  if (id) w = await get(`workflows/${id}`);
  const editable = { group_id: w.group_id, name: w.name, description: w.description, definition: w.definition, timeout_sec: w.timeout_sec,
    schedule_type: w.schedule_type, schedule_conf: w.schedule_conf, time_zone: w.time_zone, misfire_policy: w.misfire_policy,
    block_strategy: w.block_strategy, active_from: w.active_from || undefined, active_until: w.active_until || undefined };
  const text = h("textarea", { id: "workflow-json", rows: 24, cols: 80, spellcheck: "false", "aria-describedby": "workflow-json-hint" },
    JSON.stringify(editable, null, 2));
  const preview = h("div", { class: "dag-wrap", id: "workflow-preview" });
  const problem = h("p", { id: "workflow-json-problem", role: "status" });
  const draw = () => {
    try {
      const d = JSON.parse(text.value).definition;
      if (!d || !Array.isArray(d.nodes)) throw new Error("definition.nodes must be a list of nodes");
      preview.replaceChildren(drawDAG({ nodes: d.nodes.filter((n) => n && typeof n.name === "string"), edges: Array.isArray(d.edges) ? d.edges : [] }));
      problem.textContent = "";
    } catch (e) { problem.textContent = "Not drawn: " + e.message; }
  };
  text.addEventListener("input", draw);
  draw();
  const save = async (ev) => {
    ev.preventDefault();
    let body;
    try { body = JSON.parse(text.value); } catch (e) { flash("Not JSON: " + e.message, "error"); return; }
    if (id) body.version = w.version;
    try {
      const saved = id ? await call("PUT", `workflows/${id}`, body) : await post("workflows", body);
      flashNext(`Workflow ${saved.name} saved.`, "ok");
      location.hash = `#/workflows/${saved.id}`;
    } catch (e) { flash((e.field ? e.field + ": " : "") + describe(e), "error"); }
  };
  v.render(h("h1", {}, id ? `Edit workflow ${w.name}` : "New workflow"),
    h("form", { id: "workflow-form", onsubmit: save },
      h("label", { for: "workflow-json" }, "The workflow"), text,
      h("p", { class: "hint", id: "workflow-json-hint" },
        `Each node: name, job_id, and optionally params (templates {{ input.KEY }}, {{ nodes.NAME.output }}, {{ item }}), retries, timeout_sec, `,
        `start_rule (${startRules.join(", ")}), shards, for_each. Each edge: from, to. Groups you may edit: `,
        groups.map((g) => `${g.app_name} = ${g.id}`).join(", ") || "none", "."),
      problem,
      h("h2", {}, "Preview"), preview,
      h("div", { class: "actions" }, h("button", { type: "submit", id: "save-workflow" }, "Save"),
        h("a", { class: "button secondary", href: id ? `#/workflows/${id}` : "#/workflows" }, "Cancel"))));
}

// ---- a workflow run, drawn live

async function workflowRunPage(id) {
  const v = visit();
  let run = await get(`workflow-runs/${id}`);
  const [w, names] = await Promise.all([get(`workflows/${run.workflow_id}`).catch(() => null), jobNames(run.definition)]);
  const graph = h("div", { class: "dag-wrap", id: "workflow-run-graph" });
  const head = h("div");
  const nodesBody = h("tbody");
  const actions = h("div", { class: "actions" });
  const act = (label, elID, fn) => h("button", { type: "button", class: "secondary", id: elID, onclick: async () => {
    try { run = await fn(); flash(`${label}: done.`, "ok"); show(); } catch (e) { flash(describe(e), "error"); }
  } }, label);
  function show() {
    const current = new Map((run.nodes || []).filter((n) => n.current).map((n) => [n.node, n]));
    graph.replaceChildren(drawDAG(run.definition, (name) => (current.get(name) || {}).state || "waiting",
      (n) => names.get(n.job_id)));
    head.replaceChildren(h("dl", { class: "kv", id: "workflow-run-details" },
      h("dt", {}, "State"), h("dd", {}, stateBadge(run.state, "workflow-run-state"), run.message ? ` — ${run.message}` : ""),
      h("dt", {}, "Trigger"), h("dd", {}, run.trigger_type),
      h("dt", {}, "Started"), h("dd", {}, when(run.started_at || run.created_at)),
      h("dt", {}, "Took"), h("dd", {}, duration(run.started_at, run.finished_at))));
    const order = new Map(run.definition.nodes.map((d, i) => [d.name, i]));
    const listed = [...(run.nodes || [])].sort((a, b) => (order.get(a.node) - order.get(b.node)) || (a.attempt - b.attempt));
    nodesBody.replaceChildren(...listed.map((n) => h("tr", { "data-node": n.node, class: n.current ? null : "replaced" },
      h("td", {}, n.node), h("td", {}, String(n.attempt)), h("td", {}, stateBadge(n.state)),
      h("td", {}, n.run_id ? h("a", { href: `#/runs/${n.run_id}` }, `#${n.run_id}`) : "—"),
      h("td", { class: "optional" }, n.output || ""), h("td", { class: "optional" }, n.message || ""),
      h("td", {}, can("jobs.operate", run.group_id) && n.current && n.state === "failed" && !finalRun.includes(run.state) ? [
        act("Retry", `retry-${n.node}`, () => post(`workflow-runs/${id}/nodes/${encodeURIComponent(n.node)}/retry`)),
        act("Mark succeeded", `succeed-${n.node}`, () => post(`workflow-runs/${id}/nodes/${encodeURIComponent(n.node)}/mark-succeeded`))] : null))));
    actions.replaceChildren(!finalRun.includes(run.state) && can("runs.kill", run.group_id)
      ? act("Cancel the run", "cancel-workflow-run", () => post(`workflow-runs/${id}/cancel`)) : h("span"));
  }
  show();
  const shown = v.render(h("h1", {}, `Workflow run #${run.id}`),
    w ? h("p", {}, "Of workflow ", h("a", { href: `#/workflows/${w.id}` }, w.name), ".") : null,
    head, graph, actions,
    h("h2", {}, "Nodes"),
    h("div", { class: "table-wrap" }, h("table", { id: "workflow-nodes" },
      h("thead", {}, h("tr", {}, ["Node", "Attempt", "State", "Run", "Output", "Message", ""].map((c, i) => h("th", { scope: "col", class: i === 4 || i === 5 ? "optional" : null }, c)))),
      nodesBody)));
  if (!shown) return;
  // Live: read the run again every second until it ends.
  const timer = setInterval(async () => {
    if (!v.live || finalRun.includes(run.state)) { clearInterval(timer); return; }
    try { run = await get(`workflow-runs/${id}`); if (v.live) show(); } catch { /* the next tick tries again */ }
  }, 1000);
  v.onLeave(() => clearInterval(timer));
}

export const routes = [
  { path: /^\/workflows$/, page: () => workflowsPage() },
  { path: /^\/workflows\/new$/, page: () => editorPage() },
  { path: /^\/workflows\/(\d+)\/edit$/, page: (m) => editorPage(m[1]) },
  { path: /^\/workflows\/(\d+)$/, page: (m) => workflowPage(m[1]) },
  { path: /^\/workflow-runs\/(\d+)$/, page: (m) => workflowRunPage(m[1]) },
];

export const nav = [{ href: "#/workflows", label: "Workflows" }];
