// Jobs: the list with search and filters, the job page (trigger, start/stop,
// last runs), the job form.
import { APIError, call, get, post, query } from "./api.js";
import { can, canAnywhere, describe, duration, flash, flashNext, h, render, when } from "./core.js";

// ---- jobs list

async function jobsPage(params) {
  const name = params.get("name") || "";
  const cursor = params.get("cursor") || "";
  const prev = params.getAll("prev");
  const search = h("input", { id: "job-search", name: "name", type: "search", value: name, placeholder: "part of the name" });
  const toolbar = h("form", { class: "toolbar", role: "search", onsubmit: (ev) => {
    ev.preventDefault();
    location.hash = "#/jobs" + query({ name: search.value.trim() });
  } },
    h("div", {}, h("label", { for: "job-search" }, "Search jobs by name"), search),
    h("button", { type: "submit" }, "Search"),
    canAnywhere("jobs.write") ? h("a", { class: "button secondary", href: "#/jobs/new", id: "new-job" }, "New job") : null);
  const body = h("tbody");
  const table = h("div", { class: "table-wrap" }, h("table", {},
    h("caption", { class: "hint" }, name ? `Jobs whose name contains “${name}”` : "All jobs you may see"),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Name"), h("th", { scope: "col" }, "Schedule"),
      h("th", { scope: "col", class: "optional" }, "Handler"), h("th", { scope: "col" }, "Enabled"),
      h("th", { scope: "col", class: "optional" }, "Next fire"))), body));
  const pager = h("div", { class: "actions" });
  render(h("h1", {}, "Jobs"), toolbar, table, pager);
  const page = await get("jobs" + query({ name, cursor, limit: 50 }));
  if (page.items.length === 0) body.append(h("tr", {}, h("td", { colspan: 5 }, "No jobs.")));
  for (const j of page.items) {
    body.append(h("tr", { "data-job": j.id },
      h("td", {}, h("a", { href: `#/jobs/${j.id}` }, j.name)),
      h("td", {}, j.schedule_type === "none" ? "by hand" : `${j.schedule_type} ${j.schedule_conf}`),
      h("td", { class: "optional" }, j.handler || "—"),
      h("td", {}, j.enabled ? "yes" : "no"),
      h("td", { class: "optional" }, when(j.next_fire_at))));
  }
  if (cursor) {
    const back = new URLSearchParams({ name });
    prev.slice(0, -1).forEach((p) => back.append("prev", p));
    if (prev.length && prev[prev.length - 1]) back.set("cursor", prev[prev.length - 1]);
    pager.append(h("a", { class: "button secondary", href: "#/jobs?" + back }, "Previous page"));
  }
  if (page.next_cursor) {
    const next = new URLSearchParams({ name, cursor: page.next_cursor });
    prev.forEach((p) => next.append("prev", p));
    next.append("prev", cursor);
    pager.append(h("a", { class: "button secondary", href: "#/jobs?" + next, id: "next-page" }, "Next page"));
  }
}

// ---- job form

const jobFields = [
  // [field, label, kind, options/hint]
  ["name", "Name", "text"],
  ["group_id", "Group", "group"],
  ["description", "Description", "text"],
  ["schedule_type", "Schedule type", "select", ["none", "cron", "fixed_rate", "at"]],
  ["schedule_conf", "Schedule", "text", "cron: six fields with seconds, e.g. 0 */5 * * * ?; fixed_rate: seconds; at: RFC 3339 time"],
  ["time_zone", "Time zone", "text", "IANA name, e.g. Europe/Paris; empty means UTC"],
  ["handler", "Handler", "text", "the executor's job handler (empty for local and Lambda targets)"],
  ["params", "Default params", "textarea"],
  ["route_strategy", "Route strategy", "select", ["first", "last", "round", "random", "consistent_hash", "lfu", "lru", "failover", "busyover", "sharding"]],
  ["block_strategy", "When a run is still running", "select", ["SERIAL_EXECUTION", "DISCARD_LATER", "COVER_EARLY"]],
  ["misfire_policy", "Misfire policy", "select", ["do_nothing", "fire_once_now"]],
  ["timeout_sec", "Timeout (seconds, 0 = none)", "number"],
  ["retry_count", "Retries", "number"],
  ["enabled", "Enabled (fires on its schedule)", "checkbox"],
];

async function jobFormPage(id) {
  const editing = id !== undefined;
  const meta = {}; // the job's ETag: a save is refused if someone changed it since
  const [job, groups] = await Promise.all([
    editing ? call("GET", `jobs/${id}`, undefined, undefined, meta) : Promise.resolve({ schedule_type: "cron", time_zone: "UTC", route_strategy: "first", block_strategy: "SERIAL_EXECUTION", misfire_policy: "do_nothing", enabled: true }),
    get("groups" + query({ limit: 500 })),
  ]);
  const writable = groups.items.filter((g) => can("jobs.write", g.id));
  if (editing && !can("jobs.write", job.group_id)) {
    render(h("h1", {}, "Edit job"), h("p", { role: "alert" }, "You may see this job but not edit it: editing needs the “jobs.write” permission on its group."));
    return;
  }
  const inputs = {};
  const errors = {};
  const grid = h("div", { class: "grid" });
  for (const [f, label, kind, extra] of jobFields) {
    const idAttr = "f-" + f;
    let input;
    if (kind === "select") {
      input = h("select", { id: idAttr, name: f }, extra.map((o) => h("option", { value: o, selected: job[f] === o }, o)));
    } else if (kind === "group") {
      input = h("select", { id: idAttr, name: f }, writable.map((g) => h("option", { value: g.id, selected: job.group_id === g.id }, `${g.title || g.app_name} (${g.app_name})`)));
    } else if (kind === "textarea") {
      input = h("textarea", { id: idAttr, name: f, rows: 2 });
      input.value = job[f] || "";
    } else if (kind === "checkbox") {
      input = h("input", { id: idAttr, name: f, type: "checkbox", checked: !!job[f] });
    } else {
      input = h("input", { id: idAttr, name: f, type: kind, value: job[f] ?? (kind === "number" ? 0 : "") });
    }
    const hintId = idAttr + "-hint";
    const errId = idAttr + "-error";
    errors[f] = h("div", { class: "field-error", id: errId, "aria-live": "polite" });
    if (kind !== "select" && kind !== "group" && typeof extra === "string") input.setAttribute("aria-describedby", hintId + " " + errId);
    else input.setAttribute("aria-describedby", errId);
    inputs[f] = input;
    grid.append(h("div", {},
      kind === "checkbox" ? h("label", { for: idAttr }, input, " ", label) : [h("label", { for: idAttr }, label), input],
      typeof extra === "string" ? h("div", { class: "hint", id: hintId }, extra) : null,
      errors[f]));
  }
  const fires = h("section", { id: "next-fires", "aria-live": "polite", "aria-labelledby": "fires-title" },
    h("h2", { id: "fires-title" }, "Next 5 fire times"), h("p", { class: "hint" }, "…"));
  const formError = h("p", { class: "field-error", role: "alert", id: "form-error" });

  function clearErrors() {
    formError.textContent = "";
    for (const f of Object.keys(errors)) { errors[f].textContent = ""; inputs[f].removeAttribute("aria-invalid"); }
  }
  function showError(e) {
    if (e instanceof APIError && e.field && errors[e.field]) {
      errors[e.field].textContent = e.message;
      inputs[e.field].setAttribute("aria-invalid", "true");
      inputs[e.field].focus();
    } else {
      formError.textContent = describe(e);
    }
  }

  let previewSeq = 0;
  let previewTimer = 0;
  async function preview() {
    const seq = ++previewSeq;
    const body = { schedule_type: inputs.schedule_type.value, schedule_conf: inputs.schedule_conf.value, time_zone: inputs.time_zone.value, n: 5 };
    let content;
    try {
      const nf = await post("next-fires", body);
      content = nf.items.length === 0
        ? h("p", { class: "hint" }, body.schedule_type === "none" ? "Runs only by hand, by API or as a child job." : "No future fire times.")
        : h("ol", { class: "fires" }, nf.items.map((t, i) => h("li", {}, `${when(t)} (${nf.local[i]} in ${nf.time_zone || "UTC"})`)));
      errors.schedule_conf.textContent = "";
      inputs.schedule_conf.removeAttribute("aria-invalid");
    } catch (e) {
      content = h("p", { class: "field-error" }, "No preview: " + describe(e));
    }
    if (seq === previewSeq) fires.replaceChildren(fires.firstChild, content);
  }
  const schedulePreview = () => { clearTimeout(previewTimer); previewTimer = setTimeout(preview, 250); };
  for (const f of ["schedule_type", "schedule_conf", "time_zone"]) inputs[f].addEventListener("input", schedulePreview);

  const form = h("form", { novalidate: true, onsubmit: async (ev) => {
    ev.preventDefault();
    clearErrors();
    const body = {};
    for (const [f, , kind] of jobFields) {
      const v = inputs[f];
      if (kind === "checkbox") body[f] = v.checked;
      else if (kind === "number" || kind === "group") body[f] = Number(v.value);
      else body[f] = v.value;
    }
    if (editing) {
      // Keep the fields this form does not show as they are.
      for (const k of ["shard_count", "pinned_targets", "retry_backoff", "retry_delay_sec", "retry_max_delay_sec", "child_job_ids", "max_in_flight", "alarm_channels"]) body[k] = job[k];
    }
    try {
      const saved = editing
        ? await call("PUT", `jobs/${id}`, body, meta.etag ? { "If-Match": meta.etag } : {})
        : await post("jobs", body);
      flashNext(`Saved job “${saved.name}”.`, "info");
      location.hash = `#/jobs/${saved.id}`;
    } catch (e) {
      showError(e);
    }
  } }, grid, fires, formError,
    h("div", { class: "actions" }, h("button", { type: "submit", id: "save-job" }, editing ? "Save changes" : "Create job"),
      h("a", { class: "button secondary", href: editing ? `#/jobs/${id}` : "#/jobs" }, "Cancel")));
  if (writable.length === 0) {
    render(h("h1", {}, "New job"), h("p", { role: "alert" }, "You may not create jobs: that needs the “jobs.write” permission on a group."));
    return;
  }
  render(h("h1", {}, editing ? `Edit job “${job.name}”` : "New job"), form);
  preview();
}

// ---- job page

async function jobPage(id) {
  const [job, runs] = await Promise.all([get(`jobs/${id}`), get("runs" + query({ job_id: id, limit: 20 }))]);
  const actions = h("div", { class: "actions" });
  if (can("jobs.write", job.group_id)) actions.append(h("a", { class: "button", href: `#/jobs/${id}/edit`, id: "edit-job" }, "Edit"));
  if (can("jobs.operate", job.group_id)) {
    actions.append(h("button", { type: "button", class: "secondary", id: job.enabled ? "stop-job" : "start-job", onclick: async () => {
      try { await post(`jobs/${id}/${job.enabled ? "stop" : "start"}`); await jobPage(id); } catch (e) { flash(describe(e)); }
    } }, job.enabled ? "Stop scheduling" : "Start scheduling"));
  }
  let trigger = null;
  if (can("jobs.operate", job.group_id)) {
    const params = h("textarea", { id: "trigger-params", name: "params", rows: 2 });
    params.value = job.params || "";
    trigger = h("form", { "aria-labelledby": "trigger-title", onsubmit: async (ev) => {
      ev.preventDefault();
      try {
        const run = await post(`jobs/${id}/trigger`, { params: params.value });
        location.hash = `#/runs/${run.id}`;
      } catch (e) { flash(describe(e)); }
    } }, h("h2", { id: "trigger-title" }, "Trigger now"),
      h("label", { for: "trigger-params" }, "Params for this run"), params,
      h("div", { class: "actions" }, h("button", { type: "submit", id: "trigger-job" }, "Trigger now")));
  }
  const rows = runs.items.map((r) => h("tr", {},
    h("td", {}, h("a", { href: `#/runs/${r.id}` }, `#${r.id}`)),
    h("td", {}, h("span", { class: "state " + r.state }, r.state)),
    h("td", { class: "optional" }, r.trigger_type),
    h("td", {}, when(r.scheduled_at || r.created_at)),
    h("td", { class: "optional" }, duration(r.dispatched_at, r.finished_at))));
  render(h("h1", {}, job.name), actions,
    h("dl", { class: "kv" },
      h("dt", {}, "Schedule"), h("dd", {}, job.schedule_type === "none" ? "by hand" : `${job.schedule_type} ${job.schedule_conf} (${job.time_zone || "UTC"})`),
      h("dt", {}, "Enabled"), h("dd", {}, job.enabled ? "yes" : "no"),
      h("dt", {}, "Next fire"), h("dd", {}, when(job.next_fire_at)),
      h("dt", {}, "Handler"), h("dd", {}, job.handler || "—"),
      h("dt", {}, "Route strategy"), h("dd", {}, job.route_strategy),
      h("dt", {}, "Description"), h("dd", {}, job.description || "—")),
    trigger,
    h("h2", {}, "Last runs"),
    h("div", { class: "table-wrap" }, h("table", { id: "job-runs" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Run"), h("th", { scope: "col" }, "State"),
        h("th", { scope: "col", class: "optional" }, "Trigger"), h("th", { scope: "col" }, "Scheduled"), h("th", { scope: "col", class: "optional" }, "Took"))),
      h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 5 }, "No runs yet."))))));
}

export const routes = [
  { path: /^\/jobs$/, page: (m, params) => jobsPage(params) },
  { path: /^\/jobs\/new$/, page: () => jobFormPage() },
  { path: /^\/jobs\/(\d+)\/edit$/, page: (m) => jobFormPage(m[1]) },
  { path: /^\/jobs\/(\d+)$/, page: (m) => jobPage(m[1]) },
];

export const nav = [{ href: "#/jobs", label: "Jobs" }];
