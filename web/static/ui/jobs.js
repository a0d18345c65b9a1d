// Jobs: the list with search and filters, the job page (trigger, start/stop,
// last runs), the job form.
import { APIError, call, get, post, query } from "./api.js";
import { can, canAnywhere, describe, duration, finalStates, flash, flashNext, h, stateBadge, visit, when, whenIn } from "./core.js";

// ---- jobs list

const scheduleTypes = ["none", "cron", "fixed_rate", "at"];

function scheduleText(j) {
  return j.schedule_type === "none" ? "by hand" : `${j.schedule_type} ${j.schedule_conf}`;
}

// lastRun is a job's last outcome, linked to its run while retention keeps
// it; once purged the outcome stays (the job row keeps it) without a link.
function lastRun(j) {
  if (j.last_run_purged) return [stateBadge(j.last_outcome), h("span", { class: "hint last-run-purged" }, " (run purged by retention)")];
  return h("a", { href: `#/runs/${j.last_run_id}`, title: `run #${j.last_run_id}` }, stateBadge(j.last_outcome));
}

async function jobsPage(params) {
  const v = visit();
  const f = { q: params.get("q") || params.get("name") || "", group_id: params.get("group_id") || "", enabled: params.get("enabled") || "", schedule_type: params.get("schedule_type") || "",
    last_outcome: params.get("last_outcome") || "", sort: params.get("sort") || "" };
  const cursor = params.get("cursor") || "";
  const prev = params.getAll("prev");
  const groups = (await get("groups" + query({ limit: 500 }))).items;
  const groupName = Object.fromEntries(groups.map((g) => [g.id, g.title || g.app_name]));
  const search = h("input", { id: "job-search", name: "q", type: "search", value: f.q, placeholder: "name, handler or target" });
  const sel = (id, name, label, options, value) => h("div", {}, h("label", { for: id }, label),
    h("select", { id, name }, options.map(([v, t]) => h("option", { value: v, selected: String(v) === value }, t))));
  const toolbar = h("form", { class: "filters jobs-filters", role: "search", onsubmit: (ev) => {
    ev.preventDefault();
    const fd = new FormData(toolbar);
    location.hash = "#/jobs" + query({ q: String(fd.get("q")).trim(), group_id: fd.get("group_id"), enabled: fd.get("enabled"), schedule_type: fd.get("schedule_type"),
      last_outcome: fd.get("last_outcome"), sort: fd.get("sort") });
  } },
    h("div", {}, h("label", { for: "job-search" }, "Search jobs"), search),
    sel("job-group", "group_id", "Group", [["", "All groups"], ...groups.map((g) => [g.id, g.title || g.app_name])], f.group_id),
    sel("job-enabled", "enabled", "Scheduling", [["", "Started and stopped"], ["true", "Started"], ["false", "Stopped"]], f.enabled),
    sel("job-schedule-type", "schedule_type", "Schedule type", [["", "Any"], ...scheduleTypes.map((t) => [t, t])], f.schedule_type),
    sel("job-last-outcome", "last_outcome", "Last outcome", [["", "Any"], ...finalStates.map((s) => [s, s.replace("_", " ")]), ["never", "never ran"]], f.last_outcome),
    sel("job-sort", "sort", "Sort by", [["", "Oldest first"], ["name", "Name"]], f.sort),
    h("div", { class: "actions" }, h("button", { type: "submit", id: "job-search-go" }, "Search"),
      canAnywhere("jobs.write") ? h("a", { class: "button secondary", href: "#/jobs/new", id: "new-job" }, "New job") : null));
  const body = h("tbody");
  const filtered = f.q || f.group_id || f.enabled || f.schedule_type || f.last_outcome;
  const order = f.sort === "name" ? "by name" : "oldest first";
  const tableEl = h("div", { class: "table-wrap" }, h("table", { id: "jobs" },
    h("caption", { class: "hint" }, filtered ? `Jobs that match the search, ${order}` : `All jobs you may see, ${order}`),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Name"), h("th", { scope: "col", class: "optional" }, "Group"), h("th", { scope: "col" }, "Schedule"),
      h("th", { scope: "col", class: "optional" }, "Handler"), h("th", { scope: "col" }, "Enabled"),
      h("th", { scope: "col" }, "Last outcome"), h("th", { scope: "col", class: "optional" }, "Next fire"))), body));
  const pager = h("div", { class: "actions" });
  if (!v.render(h("h1", {}, "Jobs"), toolbar, tableEl, pager)) return;
  const page = await get("jobs" + query({ ...f, cursor, limit: 50 }));
  if (page.items.length === 0) body.append(h("tr", {}, h("td", { colspan: 7 }, page.next_cursor ? "No match on this page; look at the next." : "No jobs.")));
  for (const j of page.items) {
    body.append(h("tr", { "data-job": j.id },
      h("td", {}, h("a", { href: `#/jobs/${j.id}` }, j.name)),
      h("td", { class: "optional" }, groupName[j.group_id] || `group ${j.group_id}`),
      h("td", {}, scheduleText(j)),
      h("td", { class: "optional" }, j.handler || "—"),
      h("td", {}, j.enabled ? "yes" : "no"),
      h("td", { class: "last-outcome" }, j.last_outcome ? lastRun(j) : "—",
        j.last_finished_at ? h("span", { class: "optional hint" }, " " + when(j.last_finished_at)) : null),
      h("td", { class: "optional" }, whenIn(j.next_fire_at, j.time_zone))));
  }
  const base = Object.fromEntries(Object.entries(f).filter(([, v]) => v));
  if (cursor) {
    const back = new URLSearchParams(base);
    prev.slice(0, -1).forEach((p) => back.append("prev", p));
    if (prev.length && prev[prev.length - 1]) back.set("cursor", prev[prev.length - 1]);
    pager.append(h("a", { class: "button secondary", href: "#/jobs?" + back }, "Previous page"));
  }
  if (page.next_cursor) {
    const next = new URLSearchParams({ ...base, cursor: page.next_cursor });
    prev.forEach((p) => next.append("prev", p));
    next.append("prev", cursor);
    pager.append(h("a", { class: "button secondary", href: "#/jobs?" + next, id: "next-page" }, "Next page"));
  }
}

// ---- job form

const routeStrategies = ["first", "last", "round", "random", "consistent_hash", "lfu", "lru", "failover", "busyover", "sharding"];

// Every field of a job, in the form's order and sections:
// [field, label, kind, options or hint].
const jobSections = [
  ["What", [
    ["name", "Name", "text"],
    ["group_id", "Group", "group"],
    ["description", "Description", "text"],
    ["handler", "Handler", "text", "the executor's job handler (empty for local and Lambda targets)"],
    ["params", "Default params", "textarea"],
  ]],
  ["When", [
    ["schedule_type", "Schedule type", "select", scheduleTypes],
    ["schedule_conf", "Schedule", "text", "cron: six fields with seconds, e.g. 0 */5 * * * ?; fixed_rate: seconds; at: RFC 3339 time"],
    ["time_zone", "Time zone", "text", "IANA name, e.g. Europe/Paris; empty means UTC"],
    ["misfire_policy", "Misfire policy", "select", ["do_nothing", "fire_once_now"]],
    ["active_from", "Active from", "text", "no fire before this time, RFC 3339 (e.g. 2027-01-01T00:00:00Z); empty = open"],
    ["active_until", "Active until", "text", "no fire after this time, RFC 3339; empty = open"],
    ["flexible_window_min", "Flexible window (minutes, 0 = off)", "number", "each fire moves a fixed offset of up to this many minutes, spreading jobs due together"],
    ["after_completion", "After the last fire", "select", ["none", "delete"]],
    ["enabled", "Enabled (fires on its schedule)", "checkbox", "a new job starts stopped unless this is checked, as in the API, the CLI and jobs as code"],
  ]],
  ["Where", [
    ["route_strategy", "Route strategy", "select", routeStrategies],
    ["shard_count", "Shards (sharding broadcast: 0 = one per candidate)", "number"],
    ["pinned_targets", "Pinned targets", "targets", "only these of the group's candidates; none checked = all"],
  ]],
  ["How", [
    ["block_strategy", "When a run is still running", "select", ["SERIAL_EXECUTION", "DISCARD_LATER", "COVER_EARLY"]],
    ["max_in_flight", "Max runs in flight (0 = no limit)", "number"],
    ["timeout_sec", "Timeout (seconds, 0 = none)", "number"],
    ["retry_count", "Retries", "number"],
    ["retry_backoff", "Retry backoff", "select", ["fixed", "exponential"]],
    ["retry_delay_sec", "Retry delay (seconds)", "number"],
    ["retry_max_delay_sec", "Longest retry delay (seconds, 0 = no cap)", "number"],
    ["max_event_age_sec", "Max event age (seconds, 0 = no limit)", "number", "a fire older than this is neither retried nor caught up"],
    ["child_job_ids", "Child jobs", "children", "run after a success of this job; pick them by name (group/name)"],
    ["alarm_channels", "Alarm channels", "channels", "where failures are reported: the channels this server declares"],
    ["failure_destination", "Failure destination", "text", "SQS queue, SNS topic or EventBridge bus ARN, or a webhook URL; empty = the group's"],
  ]],
];
const jobFields = jobSections.flatMap(([, fs]) => fs);

const newJob = { schedule_type: "cron", schedule_conf: "", time_zone: Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC", route_strategy: "first",
  block_strategy: "SERIAL_EXECUTION", misfire_policy: "do_nothing", retry_backoff: "fixed", shard_count: 1, enabled: false };

// candidates are where a job of group g may run: its static members and
// the executors that registered under its app name.
async function candidates(g) {
  if (!g) return [];
  const execs = await get("executors" + query({ group_id: g.id })).catch(() => ({ items: [] }));
  return [...new Set([...g.members, ...execs.items.map((e) => e.address)])];
}

// pickChildren is the job form's child jobs: the chosen ones by name, each
// with a Remove button, and a box to add one by its group/name (suggested
// from the jobs this user may see; a name not among them is looked up).
// A child in a group this user may not read keeps its id.
function pickChildren(job, jobsOf, groups, errorBox) {
  const appOf = Object.fromEntries(groups.map((g) => [g.id, g.app_name]));
  const named = Object.fromEntries(jobsOf.items.filter((j) => j.id !== job.id && appOf[j.group_id])
    .map((j) => [`${appOf[j.group_id]}/${j.name}`, j.id]));
  const chosen = (job.child_job_ids || []).map((id, i) => ({ id, name: (job.child_jobs || [])[i] || `job ${id}` }));
  const list = h("ul", { class: "children", id: "child-jobs-chosen" });
  const pick = h("input", { id: "child-pick", type: "text", list: "child-job-names", placeholder: "group/name", autocomplete: "off",
    "aria-label": "Add a child job by group/name" });
  const names = h("datalist", { id: "child-job-names" }, Object.keys(named).sort().map((n) => h("option", { value: n })));
  function draw() {
    list.replaceChildren(...(chosen.length ? chosen.map((c, i) => h("li", {}, c.name, " ",
      h("button", { type: "button", class: "secondary small", "aria-label": `Remove child job ${c.name}`,
        onclick: () => { chosen.splice(i, 1); draw(); } }, "Remove")))
      : [h("li", { class: "hint" }, "No child job.")]));
  }
  async function add() {
    const name = pick.value.trim();
    errorBox().textContent = "";
    if (!name) return;
    let cid = named[name];
    if (!cid && name.includes("/")) { // beyond the suggestions: ask the server
      const at = name.indexOf("/");
      cid = (await get(`groups/${encodeURIComponent(name.slice(0, at))}/jobs/${encodeURIComponent(name.slice(at + 1))}`).catch(() => null))?.id;
    }
    if (!cid) { errorBox().textContent = `No job is named “${name}”: name it as group/name.`; pick.focus(); return; }
    if (cid === job.id) { errorBox().textContent = "A job cannot be its own child."; pick.focus(); return; }
    if (!chosen.some((c) => c.id === cid)) chosen.push({ id: cid, name });
    pick.value = "";
    draw();
  }
  pick.addEventListener("keydown", (ev) => { if (ev.key === "Enter") { ev.preventDefault(); add(); } });
  draw();
  return {
    box: h("div", {}, list, h("div", { class: "pick" }, pick, names, " ", h("button", { type: "button", class: "secondary", id: "child-add", onclick: add }, "Add"))),
    ids: () => chosen.map((c) => c.id),
  };
}

// jobFormPage edits job id, creates a job, or (copyOf) creates a copy.
async function jobFormPage(id, copyOf) {
  const v = visit();
  const editing = id !== undefined;
  const meta = {}; // the job's ETag: a save is refused if someone changed it since
  const [loaded, groups, alarmChannels, jobsOf] = await Promise.all([
    editing ? call("GET", `jobs/${id}`, undefined, undefined, meta) : copyOf ? get(`jobs/${copyOf}`) : Promise.resolve(newJob),
    get("groups" + query({ limit: 500 })),
    get("alarm-channels").catch(() => ({ items: [] })),
    get("jobs" + query({ limit: 500, sort: "name" })).catch(() => ({ items: [] })),
  ]);
  const job = copyOf ? { ...loaded, name: `${loaded.name}-copy`, enabled: false } : loaded;
  const writable = groups.items.filter((g) => can("jobs.write", g.id));
  const title = editing ? `Edit job “${job.name}”` : copyOf ? `Copy of “${loaded.name}”` : "New job";
  if (editing && !can("jobs.write", job.group_id)) {
    v.render(h("h1", {}, "Edit job"), h("p", { role: "alert" }, "You may see this job but not edit it: editing needs the “jobs.write” permission on its group."));
    return;
  }
  if (writable.length === 0) {
    v.render(h("h1", {}, title), h("p", { role: "alert" }, "You may not create jobs: that needs the “jobs.write” permission on a group."));
    return;
  }
  const inputs = {};
  const errors = {};
  const targetsBox = h("div", { class: "targets" });
  let pinned = new Set(job.pinned_targets || []);
  async function drawTargets() {
    const g = writable.find((x) => String(x.id) === String(inputs.group_id.value));
    const list = await candidates(g);
    for (const t of pinned) if (!list.includes(t)) list.push(t);
    targetsBox.replaceChildren(...(list.length ? list.map((t, i) => h("label", { class: "check", for: `pin-${i}` },
      h("input", { type: "checkbox", id: `pin-${i}`, value: t, checked: pinned.has(t), onchange: (ev) => { if (ev.target.checked) pinned.add(t); else pinned.delete(t); } }), " ", t))
      : [h("p", { class: "hint" }, "The group has no candidates yet.")]));
  }
  const childPicker = pickChildren(job, jobsOf, groups.items, () => errors.child_job_ids);
  const sections = [];
  for (const [legend, fields] of jobSections) {
    const grid = h("div", { class: "grid" });
    for (const [f, label, kind, extra] of fields) {
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
      } else if (kind === "targets") {
        input = h("fieldset", { id: idAttr, tabindex: -1 }, h("legend", {}, label), targetsBox);
      } else if (kind === "channels") {
        // The server's channels, and any the job names that it no longer declares (so a save shows the error).
        const names = [...new Set([...alarmChannels.items.map((c) => c.name), ...(job[f] || [])])];
        const kindOf = Object.fromEntries(alarmChannels.items.map((c) => [c.name, c.kind]));
        input = h("fieldset", { id: idAttr, tabindex: -1 }, h("legend", {}, label),
          names.length ? names.map((n, i) => h("label", { class: "check", for: `alarm-${i}` },
            h("input", { type: "checkbox", id: `alarm-${i}`, name: "alarm_channel", value: n, checked: (job[f] || []).includes(n) }), " ", n,
            kindOf[n] ? ` (${kindOf[n]})` : " (not declared by this server)"))
            : h("p", { class: "hint" }, "This server declares no alarm channel."));
      } else if (kind === "children") {
        input = h("fieldset", { id: idAttr, tabindex: -1 }, h("legend", {}, label), childPicker.box);
      } else {
        input = h("input", { id: idAttr, name: f, type: kind, min: kind === "number" ? 0 : null, value: job[f] ?? (kind === "number" ? 0 : "") });
      }
      const hintId = idAttr + "-hint";
      const errId = idAttr + "-error";
      errors[f] = h("div", { class: "field-error", id: errId, "aria-live": "polite" });
      input.setAttribute("aria-describedby", (typeof extra === "string" ? hintId + " " : "") + errId);
      inputs[f] = input;
      const boxes = kind === "targets" || kind === "channels" || kind === "children";
      grid.append(h("div", { class: boxes ? "wide" : null },
        kind === "checkbox" ? h("label", { for: idAttr }, input, " ", label) : boxes ? input : [h("label", { for: idAttr }, label), input],
        typeof extra === "string" ? h("div", { class: "hint", id: hintId }, extra) : null,
        errors[f]));
    }
    sections.push(h("fieldset", {}, h("legend", {}, legend), grid));
  }
  inputs.group_id.addEventListener("change", () => { pinned = new Set(); drawTargets(); });
  const fires = h("section", { id: "next-fires", "aria-live": "polite", "aria-labelledby": "fires-title" },
    h("h2", { id: "fires-title" }, "Next 5 fire times"), h("p", { class: "hint" }, "…"));
  const formError = h("p", { class: "field-error", role: "alert", id: "form-error" });

  function clearErrors() {
    formError.textContent = "";
    for (const f of Object.keys(errors)) { errors[f].textContent = ""; inputs[f].removeAttribute("aria-invalid"); }
  }
  function showError(e) {
    const field = e instanceof APIError && e.field ? e.field.replace(/\[\d+\]$/, "") : "";
    if (field && errors[field]) {
      errors[field].textContent = e.message;
      inputs[field].setAttribute("aria-invalid", "true");
      inputs[field].focus();
    } else {
      formError.textContent = describe(e);
    }
  }

  let previewSeq = 0;
  let previewTimer = 0;
  async function preview() {
    const seq = ++previewSeq;
    const body = { schedule_type: inputs.schedule_type.value, schedule_conf: inputs.schedule_conf.value, time_zone: inputs.time_zone.value, n: 5,
      name: inputs.name ? inputs.name.value : "", active_from: inputs.active_from.value, active_until: inputs.active_until.value,
      flexible_window_min: Number(inputs.flexible_window_min.value) };
    let content;
    try {
      const nf = await post("next-fires", body);
      content = nf.items.length === 0
        ? h("p", { class: "hint" }, body.schedule_type === "none" ? "Runs only by hand, by API or as a child job." : "No future fire times.")
        : h("ol", { class: "fires" }, nf.items.map((t, i) => h("li", {}, `${nf.local[i]} in ${nf.time_zone || "UTC"} (${when(t)} your time)`)));
      if (nf.note) content = h("div", {}, content, h("p", { class: "hint", id: "fires-note" }, nf.note));
      errors.schedule_conf.textContent = "";
      inputs.schedule_conf.removeAttribute("aria-invalid");
    } catch (e) {
      content = h("p", { class: "field-error" }, "No preview: " + describe(e));
    }
    if (seq === previewSeq) fires.replaceChildren(fires.firstChild, content);
  }
  const schedulePreview = () => { clearTimeout(previewTimer); previewTimer = setTimeout(preview, 250); };
  for (const f of ["schedule_type", "schedule_conf", "time_zone", "active_from", "active_until", "flexible_window_min"]) inputs[f].addEventListener("input", schedulePreview);

  const form = h("form", { novalidate: true, onsubmit: async (ev) => {
    ev.preventDefault();
    clearErrors();
    const body = {};
    for (const [f, , kind] of jobFields) {
      const v = inputs[f];
      if (kind === "checkbox") body[f] = v.checked;
      else if (kind === "number" || kind === "group") body[f] = Number(v.value);
      else if (kind === "targets") body[f] = [...pinned];
      else if (kind === "channels") body[f] = [...v.querySelectorAll("input:checked")].map((c) => c.value);
      else if (kind === "children") body[f] = childPicker.ids();
      else body[f] = v.value;
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
  } }, sections, fires, formError,
    h("div", { class: "actions" }, h("button", { type: "submit", id: "save-job" }, editing ? "Save changes" : "Create job"),
      h("a", { class: "button secondary", href: editing ? `#/jobs/${id}` : "#/jobs" }, "Cancel")));
  if (!v.render(h("h1", {}, title), form)) return;
  drawTargets();
  preview();
}

// ---- job page

async function jobPage(id) {
  const v = visit();
  const [job, runs, nf] = await Promise.all([get(`jobs/${id}`), get("runs" + query({ job_id: id, limit: 20 })),
    get(`jobs/${id}/next-fires?n=1`).catch(() => null)]);
  // The group; the child jobs come named (a child in a group this user may
  // not read keeps its id).
  const group = await get(`groups/${job.group_id}`).catch(() => null);
  const children = (job.child_job_ids || []).map((c, i) => ({ id: c, name: (job.child_jobs || [])[i] }));
  const actions = h("div", { class: "actions" });
  if (can("jobs.write", job.group_id)) {
    actions.append(h("a", { class: "button", href: `#/jobs/${id}/edit`, id: "edit-job" }, "Edit"),
      h("a", { class: "button secondary", href: `#/jobs/${id}/copy`, id: "copy-job" }, "Copy"));
  }
  if (can("jobs.operate", job.group_id)) {
    actions.append(h("button", { type: "button", class: "secondary", id: job.enabled ? "stop-job" : "start-job", onclick: async () => {
      try {
        await post(`jobs/${id}/${job.enabled ? "stop" : "start"}`);
        flash(job.enabled ? "Stopped: the job no longer fires on its schedule." : "Started: the job fires on its schedule.", "info");
        if (v.live) await jobPage(id);
      } catch (e) { flash(describe(e)); }
    } }, job.enabled ? "Stop scheduling" : "Start scheduling"));
  }
  if (can("jobs.write", job.group_id)) {
    actions.append(h("button", { type: "button", class: "danger", id: "delete-job", onclick: async () => {
      if (!confirm(`Delete job “${job.name}” and its runs? This cannot be undone.`)) return;
      try {
        await call("DELETE", `jobs/${id}`);
        flashNext(`Deleted job “${job.name}”.`, "info");
        location.hash = "#/jobs";
      } catch (e) { flash(describe(e)); }
    } }, "Delete"));
  }
  let trigger = null;
  if (can("jobs.operate", job.group_id)) {
    const params = h("textarea", { id: "trigger-params", name: "params", rows: 2 });
    params.value = job.params || "";
    const targets = await candidates(group);
    const target = h("select", { id: "trigger-target", name: "target" },
      h("option", { value: "" }, `Routed (${job.route_strategy})`), targets.map((t) => h("option", { value: t }, t)));
    // Shard options: how many shards to fan out to, and whether to run only
    // one of them (XXL-JOB passes shardIndex/shardTotal to the handler).
    const ownShards = job.route_strategy === "sharding" ? "one per executor" : "1";
    const shardTotal = h("input", { id: "trigger-shard-total", name: "shard_total", type: "number", min: 1, max: 1000, placeholder: `the job's (${ownShards})`,
      "aria-describedby": "trigger-shards-hint" });
    const shardIndex = h("input", { id: "trigger-shard-index", name: "shard_index", type: "number", min: 0, placeholder: "all shards",
      "aria-describedby": "trigger-shards-hint" });
    const num = (input) => (input.value === "" ? undefined : Number(input.value));
    trigger = h("form", { "aria-labelledby": "trigger-title", onsubmit: async (ev) => {
      ev.preventDefault();
      try {
        const run = await post(`jobs/${id}/trigger`, { params: params.value, target: target.value || undefined,
          shard_total: num(shardTotal), shard_index: num(shardIndex) });
        location.hash = `#/runs/${run.id}`;
      } catch (e) { flash(describe(e)); }
    } }, h("h2", { id: "trigger-title" }, "Trigger now"),
      h("div", { class: "grid" },
        h("div", {}, h("label", { for: "trigger-params" }, "Params for this run"), params),
        h("div", {}, h("label", { for: "trigger-target" }, "Target"), target),
        h("div", {}, h("label", { for: "trigger-shard-total" }, "Shard count"), shardTotal),
        h("div", {}, h("label", { for: "trigger-shard-index" }, "Only shard number"), shardIndex)),
      h("p", { class: "hint", id: "trigger-shards-hint" }, `Empty: all of the job's shards (${ownShards}). A shard count fans out to that many shards; `,
        "a shard number (from 0) runs only that shard of them. Each run is told its shard index and total."),
      h("div", { class: "actions" }, h("button", { type: "submit", id: "trigger-job" }, "Trigger now")));
  }
  const rows = runs.items.map((r) => h("tr", {},
    h("td", {}, h("a", { href: `#/runs/${r.id}` }, `#${r.id}`)),
    h("td", {}, stateBadge(r.state)),
    h("td", { class: "optional" }, r.trigger_type),
    h("td", {}, when(r.scheduled_at || r.created_at)),
    h("td", { class: "optional" }, duration(r.dispatched_at, r.finished_at))));
  const list = (xs) => (xs && xs.length ? xs.join(", ") : "—");
  v.render(h("h1", {}, job.name), actions,
    h("dl", { class: "kv" },
      h("dt", {}, "Group"), h("dd", {}, group ? h("a", { href: `#/groups/${group.id}` }, group.title || group.app_name) : `group ${job.group_id}`),
      h("dt", {}, "Schedule"), h("dd", {}, job.schedule_type === "none" ? "by hand" : `${job.schedule_type} ${job.schedule_conf} (${job.time_zone || "UTC"})`),
      h("dt", {}, "Enabled"), h("dd", { id: "job-enabled" }, job.enabled ? "yes" : "no"),
      h("dt", {}, "Next fire"), h("dd", { id: "job-next-fire" }, whenIn(job.next_fire_at, job.time_zone), nf && nf.note ? h("span", { class: "hint" }, ` (${nf.note})`) : ""),
      h("dt", {}, "Active window"), h("dd", { id: "job-active" }, job.active_from || job.active_until
        ? `${job.active_from ? whenIn(job.active_from, job.time_zone) : "open"} to ${job.active_until ? whenIn(job.active_until, job.time_zone) : "open"}` : "always"),
      h("dt", {}, "Flexible window"), h("dd", {}, job.flexible_window_min ? `${job.flexible_window_min} min` : "off"),
      h("dt", {}, "Max event age"), h("dd", {}, job.max_event_age_sec ? `${job.max_event_age_sec} s` : "no limit"),
      h("dt", {}, "After the last fire"), h("dd", {}, job.after_completion === "delete" ? "deleted" : "kept, stopped"),
      h("dt", {}, "Failure destination"), h("dd", {}, job.failure_destination || (group && group.failure_destination ? `${group.failure_destination} (the group's)` : "—")),
      h("dt", {}, "Last fire"), h("dd", {}, whenIn(job.last_fire_at, job.time_zone)),
      h("dt", {}, "Last outcome"), h("dd", { id: "job-last-run" }, ...(!job.last_outcome ? ["no run has finished yet"]
        : [stateBadge(job.last_outcome), ` ${whenIn(job.last_finished_at, job.time_zone)} `, job.last_run_purged
          ? h("span", { class: "hint" }, `(run #${job.last_run_id} purged by retention)`)
          : h("a", { href: `#/runs/${job.last_run_id}` }, `run #${job.last_run_id}`)])),
      h("dt", {}, "Handler"), h("dd", {}, job.handler || "—"),
      h("dt", {}, "Default params"), h("dd", { id: "job-params" }, job.params ? h("code", {}, job.params) : "—"),
      h("dt", {}, "Misfire policy"), h("dd", { id: "job-misfire" }, job.misfire_policy === "fire_once_now" ? "fire_once_now (a missed fire runs once, late)" : "do_nothing (a missed fire is recorded, not run)"),
      h("dt", {}, "Route strategy"), h("dd", {}, job.route_strategy),
      h("dt", {}, "Shards"), h("dd", { id: "job-shards" }, job.route_strategy === "sharding" ? (job.shard_count ? `${job.shard_count} per fire` : "one per candidate") : String(job.shard_count || 1)),
      h("dt", {}, "Pinned targets"), h("dd", {}, list(job.pinned_targets)),
      h("dt", {}, "Block strategy"), h("dd", { id: "job-block" }, { SERIAL_EXECUTION: "SERIAL_EXECUTION (queue behind the running run)",
        DISCARD_LATER: "DISCARD_LATER (drop the new run)", COVER_EARLY: "COVER_EARLY (kill the running run)" }[job.block_strategy] || job.block_strategy),
      h("dt", {}, "Retries"), h("dd", { id: "job-retries" }, job.retry_count
        ? `${job.retry_count}, ${job.retry_backoff}: ${job.retry_delay_sec} s` + (job.retry_backoff === "exponential" ? `, doubling up to ${job.retry_max_delay_sec || "no limit of"} s` : " between tries")
        : "none"),
      h("dt", {}, "Timeout"), h("dd", {}, job.timeout_sec ? `${job.timeout_sec} s` : "none"),
      h("dt", {}, "Max in flight"), h("dd", {}, job.max_in_flight || "no limit"),
      h("dt", {}, "Child jobs"), h("dd", { id: "job-children" }, children.length ? children.flatMap((c, i) => [i ? ", " : "",
        h("a", { href: `#/jobs/${c.id}` }, c.name && c.name !== String(c.id) ? c.name : `job ${c.id}`)]) : "—"),
      h("dt", {}, "Alarms"), h("dd", {}, list(job.alarm_channels) + (job.alarm_state ? ` (${typeof job.alarm_state === "string" ? job.alarm_state : JSON.stringify(job.alarm_state)})` : "")),
      h("dt", {}, "Created"), h("dd", {}, when(job.created_at)),
      h("dt", {}, "Updated"), h("dd", {}, when(job.updated_at)),
      h("dt", {}, "Description"), h("dd", {}, job.description || "—")),
    trigger,
    h("h2", {}, "Last runs"),
    h("p", {}, h("a", { href: `#/runs?group_id=${job.group_id}&job_id=${id}` }, "All runs of this job")),
    h("div", { class: "table-wrap" }, h("table", { id: "job-runs" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Run"), h("th", { scope: "col" }, "State"),
        h("th", { scope: "col", class: "optional" }, "Trigger"), h("th", { scope: "col" }, "Scheduled"), h("th", { scope: "col", class: "optional" }, "Took"))),
      h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 5 }, job.last_outcome
        ? "None kept: finished runs are deleted once older than the retention (retention.runs)." : "No runs yet."))))));
}

export const routes = [
  { path: /^\/jobs$/, page: (m, params) => jobsPage(params) },
  { path: /^\/jobs\/new$/, page: () => jobFormPage() },
  { path: /^\/jobs\/(\d+)\/edit$/, page: (m) => jobFormPage(m[1]) },
  { path: /^\/jobs\/(\d+)\/copy$/, page: (m) => jobFormPage(undefined, m[1]) },
  { path: /^\/jobs\/(\d+)$/, page: (m) => jobPage(m[1]) },
];

export const nav = [{ href: "#/jobs", label: "Jobs" }];
