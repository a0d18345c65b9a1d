// Runs: the list with filters, the run page with its live log.
import { get, post, query } from "./api.js";
import { can, describe, duration, finalStates, flash, h, jobLink, jobName, stateBadge, visit, when } from "./core.js";

const states = ["scheduled", "dispatching", "running", "succeeded", "failed", "timed_out", "killed", "lost", "misfired"];

// toLocalInput turns an ISO time into a datetime-local value in the
// viewer's zone, and back.
const toLocalInput = (iso) => {
  if (!iso) return "";
  const d = new Date(iso);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
};
const fromLocalInput = (v) => (v ? new Date(v).toISOString() : "");

// ---- runs list

async function runsPage(params) {
  const v = visit();
  const f = { job_id: params.get("job_id") || "", group_id: params.get("group_id") || "", state: params.get("state") || "", trigger_type: params.get("trigger_type") || "",
    from: params.get("from") || "", to: params.get("to") || "", target: params.get("target") || "" };
  const cursor = params.get("cursor") || "";
  const prev = params.getAll("prev");
  const groups = (await get("groups" + query({ limit: 500 }))).items;
  const field = (id, label, input) => h("div", {}, h("label", { for: id }, label), input);
  // The job filter picks a group, then one of its jobs by name (as
  // XXL-JOB's log page does); a link with only a job id finds its group.
  let groupOfJob = f.group_id;
  if (f.job_id && !groupOfJob) groupOfJob = String((await get(`jobs/${f.job_id}`).catch(() => ({}))).group_id || "");
  const groupSelect = h("select", { id: "runs-group", name: "group_id", onchange: () => fillJobs("") }, h("option", { value: "" }, "All groups"),
    groups.map((g) => h("option", { value: g.id, selected: String(g.id) === groupOfJob }, g.title && g.title !== g.app_name ? `${g.app_name} (${g.title})` : g.app_name)));
  const jobSelect = h("select", { id: "runs-job", name: "job_id", "aria-describedby": "runs-job-hint" });
  let fills = 0;
  async function fillJobs(selected) {
    const mine = ++fills;
    const gid = groupSelect.value;
    const first = h("option", { value: "" }, gid ? "All jobs of the group" : "All jobs (pick a group first)");
    const jobs = gid ? (await get("jobs" + query({ group_id: gid, sort: "name", limit: 500 }))).items : [];
    if (mine !== fills) return; // the group changed again while this one loaded
    jobSelect.replaceChildren(first, ...jobs.map((j) => h("option", { value: j.id, selected: String(j.id) === selected }, j.name)));
    jobSelect.disabled = !gid;
  }
  await fillJobs(f.job_id);
  const form = h("form", { class: "filters", role: "search", onsubmit: (ev) => {
    ev.preventDefault();
    const fd = new FormData(form);
    location.hash = "#/runs" + query({ job_id: fd.get("job_id"), group_id: fd.get("group_id"), state: fd.get("state"), trigger_type: fd.get("trigger_type"),
      from: fromLocalInput(fd.get("from")), to: fromLocalInput(fd.get("to")), target: String(fd.get("target")).trim() });
  } },
    field("runs-group", "Group", groupSelect),
    field("runs-job", "Job", jobSelect),
    field("runs-state", "State", h("select", { id: "runs-state", name: "state" }, h("option", { value: "" }, "Any"),
      h("option", { value: "failed,timed_out,lost", selected: f.state === "failed,timed_out,lost" }, "any failure"),
      states.map((s) => h("option", { value: s, selected: s === f.state }, s)))),
    field("runs-trigger", "Trigger", h("select", { id: "runs-trigger", name: "trigger_type" }, h("option", { value: "" }, "Any"),
      ["schedule", "misfire", "manual", "retry", "parent"].map((t) => h("option", { value: t, selected: t === f.trigger_type }, t === "parent" ? "child job (after its parent)" : t)))),
    field("runs-target", "Target", h("input", { id: "runs-target", name: "target", type: "text", value: f.target, placeholder: "http://10.0.0.5:9999 or local://name",
      "aria-describedby": "runs-target-hint" })),
    field("runs-from", "Scheduled from (your time)", h("input", { id: "runs-from", name: "from", type: "datetime-local", value: toLocalInput(f.from) })),
    field("runs-to", "Scheduled before (your time)", h("input", { id: "runs-to", name: "to", type: "datetime-local", value: toLocalInput(f.to) })),
    h("div", { class: "actions" }, h("button", { type: "submit", id: "runs-filter" }, "Show runs")),
    h("p", { class: "hint", id: "runs-job-hint" }, "Jobs are listed by name once a group is picked."),
    h("p", { class: "hint", id: "runs-target-hint" }, "A target filter looks at 100,000 runs per page: a page may show fewer runs, or none, and still have a next page."));
  const body = h("tbody");
  const pager = h("div", { class: "actions" });
  const shown = v.render(h("h1", {}, "Runs"), form, h("div", { class: "table-wrap" }, h("table", { id: "runs" },
    h("thead", {}, h("tr", {}, ["Run", "Job", "State", "Scheduled", "Took", "Target"].map((c, i) => h("th", { scope: "col", class: i >= 4 ? "optional" : null }, c)))), body)), pager);
  if (!shown) return;
  const page = await get("runs" + query({ ...f, cursor, limit: 50 }));
  if (!page.items.length) body.append(h("tr", {}, h("td", { colspan: 6 }, page.next_cursor ? "No match among these runs; look at the next page." : "No runs match.")));
  for (const r of page.items) {
    body.append(h("tr", { "data-run": r.id },
      h("td", {}, h("a", { href: `#/runs/${r.id}` }, `#${r.id}`), r.shard_total > 1 ? ` (shard ${r.shard_index + 1}/${r.shard_total})` : ""),
      h("td", {}, jobLink(r)),
      h("td", {}, stateBadge(r.state)),
      h("td", {}, when(r.scheduled_at || r.created_at)),
      h("td", { class: "optional" }, duration(r.dispatched_at, r.finished_at)),
      h("td", { class: "optional" }, r.target || "—")));
  }
  const base = Object.fromEntries(Object.entries(f).filter(([, v]) => v));
  if (cursor) {
    const back = new URLSearchParams(base);
    prev.slice(0, -1).forEach((p) => back.append("prev", p));
    if (prev.length && prev[prev.length - 1]) back.set("cursor", prev[prev.length - 1]);
    pager.append(h("a", { class: "button secondary", href: "#/runs?" + back }, "Previous page"));
  }
  if (page.next_cursor) {
    const next = new URLSearchParams({ ...base, cursor: page.next_cursor });
    prev.forEach((p) => next.append("prev", p));
    next.append("prev", cursor);
    pager.append(h("a", { class: "button secondary", href: "#/runs?" + next, id: "runs-next-page" }, "Next page"));
  }
}

// ---- run page with a live log

async function runPage(id) {
  const v = visit();
  let run = await get(`runs/${id}`);
  const log = h("pre", { class: "log", id: "run-log", tabindex: 0, "aria-label": "Run log", "aria-live": "off" });
  const status = h("p", { class: "hint", id: "log-status", "aria-live": "polite" });
  const details = h("dl", { class: "kv", id: "run-details" });
  const actions = h("div", { class: "actions" });
  const attemptsBox = h("div", { id: "run-attempts" });
  // The retry chain, the child runs and the parent run, found exactly by
  // the API; they appear after the run ends, so they are read again while
  // the page is open.
  const relatedBox = h("div", { id: "run-related" });
  const runLink = (r, text) => h("a", { href: `#/runs/${r.id}` }, text || `#${r.id}`);
  // The run this one retries, once retention has deleted it (the chain
  // then starts after it): named, not linked.
  let retryOfPurged = false;
  async function showRelated() {
    // A failure's retry is decided by the scheduler shortly after it ends.
    if (run.retry === "pending") { run = await get(`runs/${id}`); showRun(); }
    const rel = await get(`runs/${id}/related`);
    const purged = Boolean(run.retry_of) && !rel.retry_chain.some((r) => r.id === run.retry_of);
    if (purged !== retryOfPurged) { retryOfPurged = purged; showRun(); }
    const parts = [];
    if (rel.parent) parts.push(h("p", { id: "run-parent" }, "Triggered by the success of ", runLink(rel.parent, `run #${rel.parent.id}`), ` (${jobName(rel.parent)}).`));
    parts.push(h("h3", {}, "Retry chain"), rel.retry_chain.length > 1
      ? h("ol", { id: "retry-chain" }, rel.retry_chain.map((r) => h("li", { "data-run": r.id, "aria-current": String(r.id) === String(id) ? "page" : null },
        String(r.id) === String(id) ? h("strong", {}, `#${r.id} (this run)`) : runLink(r), ` attempt ${r.attempt + 1} `, stateBadge(r.state))))
      : h("p", { class: "hint", id: "retry-chain" }, "Not retried."));
    parts.push(h("h3", {}, "Child runs"), rel.children.length
      ? h("ul", { id: "child-runs" }, rel.children.map((r) => h("li", { "data-run": r.id }, runLink(r), ` of `, jobLink(r), " ", stateBadge(r.state))))
      : h("p", { class: "hint", id: "child-runs" }, "None (a success triggers the job's child jobs)."));
    if (rel.children_hidden) parts.push(h("p", { class: "hint" }, `${rel.children_hidden} more in groups you may not read.`));
    relatedBox.replaceChildren(...parts);
  }
  // What follows a failed run (the API's retry): its retry, or why none.
  function retryOf(r) {
    switch (r.retry) {
      case "pending": return ["being decided: a retry follows if the job has retries left"];
      case "scheduled": return ["retried by ", runLink({ id: r.retry_run_id }, `run #${r.retry_run_id}`)];
      case "none": return ["none: this was the last attempt"];
      default: return ["—"];
    }
  }
  function showRun() {
    details.replaceChildren(...[
      h("dt", {}, "State"), h("dd", {}, stateBadge(run.state, "run-state"), run.late ? " (fired late)" : ""),
      h("dt", {}, "Job"), h("dd", { id: "run-job" }, jobLink(run)),
      h("dt", {}, "Trigger"), h("dd", {}, run.trigger_type),
      h("dt", {}, "Params"), h("dd", { id: "run-params" }, run.params || "—"),
      h("dt", {}, "Target"), h("dd", {}, run.target || "—"),
      h("dt", {}, "Handler"), h("dd", {}, run.handler || "—"),
      h("dt", {}, "Node"), h("dd", {}, run.node || "—"),
      h("dt", {}, "Scheduled"), h("dd", {}, when(run.scheduled_at)),
      h("dt", {}, "Dispatched"), h("dd", {}, when(run.dispatched_at)),
      h("dt", {}, "Finished"), h("dd", {}, when(run.finished_at)),
      h("dt", {}, "Took"), h("dd", {}, duration(run.dispatched_at, run.finished_at)),
      h("dt", {}, "Shard"), h("dd", { id: "run-shard" }, run.shard_total > 1 ? `${run.shard_index + 1} of ${run.shard_total}` : "not sharded"),
      h("dt", {}, "Attempt"), h("dd", { id: "run-attempt" }, ...(run.attempt === 0 ? ["first"] : !run.retry_of ? [`retry ${run.attempt}`]
        : [`retry ${run.attempt} of `, retryOfPurged ? `run #${run.retry_of} (purged by retention)` : h("a", { href: `#/runs/${run.retry_of}` }, `run #${run.retry_of}`)])),
      h("dt", {}, "Retry"), h("dd", { id: "run-retry" }, ...retryOf(run)),
      h("dt", {}, "Alarm"), h("dd", { id: "run-alarm" }, run.alarm_status || "—"),
      h("dt", {}, "Result code"), h("dd", {}, run.result_code || "—"),
      h("dt", {}, "Message"), h("dd", {}, run.message || "—")].flat().filter(Boolean));
    const attempts = Array.isArray(run.attempts) ? run.attempts : [];
    attemptsBox.replaceChildren(attempts.length
      ? h("ol", { class: "attempts" }, attempts.map((a) => h("li", {}, typeof a === "object" ? Object.entries(a).map(([k, v]) => `${k}: ${v}`).join(", ") : String(a))))
      : h("p", { class: "hint" }, "One target, tried once."));
    // The button stays the same node while the run may be killed, so a
    // refresh never takes it (or the keyboard focus) away mid-click.
    const killable = !finalStates.includes(run.state) && can("runs.kill", run.group_id);
    if (killable && !killButton.isConnected) actions.append(killButton);
    if (!killable) killButton.remove();
  }
  // The kill asks first, showing what it stops as the API says it
  // (kill-scope): on an XXL-JOB executor a kill stops every run of the job
  // held there. Cancel changes nothing.
  const killButton = h("button", { type: "button", class: "danger", id: "kill-run", onclick: async () => {
    const scope = await askKill(id);
    if (!scope) return;
    try { run = await post(`runs/${id}/kill`); showRun(); } catch (e) { flash(describe(e)); }
  } }, "Kill run");
  showRun();
  const shown = v.render(h("h1", {}, `Run #${run.id}`, h("span", { class: "subtitle" }, ` of ${jobName(run)}`)), actions, details,
    h("h2", {}, "Targets tried (failover)"), attemptsBox,
    h("p", {}, h("a", { href: `#/runs?group_id=${run.group_id}&job_id=${run.job_id}` }, "Other runs of this job")),
    h("h2", {}, "Retries and child runs"), relatedBox,
    h("h2", {}, "Log"), status, log);
  if (!shown) return;

  // Follow the log: ask for the lines after the last one we have until the
  // API says the run has finished and no more lines follow.
  let nextLine = 1;
  let stopped = false;
  v.onLeave(() => { stopped = true; });
  (async () => {
    for (let i = 0; !stopped && i < 150; i++) {
      try { await showRelated(); } catch (e) { relatedBox.replaceChildren(h("p", { class: "hint" }, "Related runs cannot be read now: " + describe(e))); }
      await new Promise((r) => setTimeout(r, 2000));
    }
  })();
  while (!stopped) {
    try {
      const chunk = await get(`runs/${id}/log` + query({ from_line: nextLine }));
      if (chunk.content) {
        const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
        log.append(chunk.content.endsWith("\n") ? chunk.content : chunk.content + "\n");
        if (atBottom) log.scrollTop = log.scrollHeight;
      }
      if (chunk.to_line >= nextLine) nextLine = chunk.to_line + 1;
      run = await get(`runs/${id}`);
      showRun();
      if (chunk.end) {
        status.textContent = nextLine > 1 ? "The run has finished; this is its whole log."
          : "The run has finished without a log, or its log was deleted by retention (retention.logs).";
        break;
      }
      status.textContent = "Following the log live…";
    } catch (e) {
      status.textContent = "The log cannot be read now: " + describe(e);
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

// askKill shows what a kill of run id stops in a modal dialog and resolves
// to the scope when the user confirms, null when they cancel (Escape,
// Cancel) or there is nothing to kill.
function askKill(id) {
  const summary = h("p", { id: "kill-scope-summary", "aria-live": "polite" }, "Asking what the kill stops…");
  const list = h("div", { id: "kill-scope-runs" });
  const confirmBtn = h("button", { type: "button", class: "danger", id: "kill-confirm", disabled: true }, "Kill");
  const cancelBtn = h("button", { type: "button", class: "secondary", id: "kill-cancel" }, "Cancel");
  const dialog = h("dialog", { id: "kill-dialog", "aria-labelledby": "kill-dialog-title", "aria-describedby": "kill-scope-summary" },
    h("h2", { id: "kill-dialog-title" }, `Kill run #${id}?`), summary, list,
    h("div", { class: "actions" }, confirmBtn, cancelBtn));
  document.body.append(dialog);
  dialog.showModal();
  cancelBtn.focus();
  let scope = null;
  return new Promise((resolve) => {
    const done = (answer) => { dialog.close(); dialog.remove(); resolve(answer); };
    cancelBtn.addEventListener("click", () => done(null));
    dialog.addEventListener("cancel", (e) => { e.preventDefault(); done(null); });
    confirmBtn.addEventListener("click", () => done(scope));
    get(`runs/${id}/kill-scope`).then((s) => {
      summary.textContent = s.summary;
      if (!s.killable) { cancelBtn.textContent = "Close"; return; }
      scope = s;
      list.replaceChildren(h("table", { class: "kill-scope" },
        h("caption", {}, s.stops.length === 1 ? "The run the kill stops" : `The ${s.stops.length} runs the kill stops`),
        h("thead", {}, h("tr", {}, ["Run", "Job", "Shard", "State", "Target"].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, s.stops.map((r) => h("tr", { "data-run": r.id },
          h("td", {}, `#${r.id}`, String(r.id) === String(id) ? " (this run)" : ""),
          h("td", {}, jobName(r)),
          h("td", {}, r.shard_total > 1 ? `${r.shard_index + 1} of ${r.shard_total}` : "—"),
          h("td", {}, stateBadge(r.state)),
          h("td", {}, r.target || "—"))))));
      confirmBtn.textContent = s.stops.length === 1 ? "Kill this run" : `Kill these ${s.stops.length} runs`;
      confirmBtn.disabled = false;
    }, (e) => { summary.textContent = "What the kill stops cannot be read now: " + describe(e); });
  });
}

export const routes = [
  { path: /^\/runs$/, page: (m, params) => runsPage(params) },
  { path: /^\/runs\/(\d+)$/, page: (m) => runPage(m[1]) },
];

export const nav = [{ href: "#/runs", label: "Runs" }];
