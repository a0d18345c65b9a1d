// Groups and executors: each group's static members (HTTP executors,
// Lambda functions, local commands) and the executors that registered by
// heartbeat; create and edit groups.
import { APIError, call, get, post, put, query } from "./api.js";
import { can, describe, flash, flashNext, h, me, seconds, shownOnce, table, visit, when } from "./core.js";

const targetKind = (t) => (t.startsWith("lambda://") ? "Lambda function" : t.startsWith("local://") ? "local command" : "HTTP executor");

function executorRows(items) {
  return items.map((e) => h("tr", {},
    h("td", {}, e.address),
    h("td", {}, e.app_name),
    h("td", { class: "optional" }, e.protocol || "XXL-JOB 2.x–3.4"),
    h("td", { class: "optional" }, when(e.registered_at)),
    h("td", {}, seconds(e.heartbeat_age_ms / 1000) + " ago"),
    // Busy: the runs running on it now, linked to them.
    h("td", { class: "executor-load" }, e.busy
      ? h("a", { href: "#/runs" + query({ target: e.address, state: "running" }) }, `busy (${e.running} running)`)
      : "idle")));
}
const executorCols = [["Address"], ["App name"], ["Protocol", true], ["Registered", true], ["Last heartbeat"], ["Load"]];

async function groupsPage() {
  const v = visit();
  const [groups, execs] = await Promise.all([get("groups" + query({ limit: 500 })), get("executors")]);
  const byApp = {};
  for (const e of execs.items) (byApp[e.app_name] ||= []).push(e);
  v.render(h("h1", {}, "Groups and executors"),
    me().admin ? h("div", { class: "actions" }, h("a", { class: "button", href: "#/groups/new", id: "new-group" }, "New group")) : null,
    h("h2", {}, "Groups"),
    table({ id: "groups" }, [["Group"], ["App name", true], ["Static members"], ["Registered executors"]],
      groups.items.map((g) => h("tr", { "data-group": g.id },
        h("td", {}, h("a", { href: `#/groups/${g.id}` }, g.title || g.app_name)),
        h("td", { class: "optional" }, g.app_name),
        h("td", {}, g.members.length ? g.members.map((m) => h("div", {}, m, " ", h("span", { class: "badge" }, targetKind(m)))) : "—"),
        h("td", {}, String((byApp[g.app_name] || []).length)))), "No groups you may see."),
    h("h2", {}, "Registered executors"),
    table({ id: "executors" }, executorCols, executorRows(execs.items), "No executor has registered."));
}

// tokenSection changes the group's executor token, which cannot be read
// back: rotate (the server generates one, shown once) or set one (to match
// executors that already hold an accessToken), or go back to the server's.
// onChange gets the group as it is afterwards.
function tokenSection(g, onChange) {
  const shown = h("div", { "aria-live": "polite", id: "executor-token-shown" });
  const err = h("p", { class: "field-error", role: "alert", id: "executor-token-error" });
  const state = h("p", { id: "executor-token-state" });
  const input = h("input", { id: "executor-token-input", type: "password", autocomplete: "off", "aria-describedby": "executor-token-hint executor-token-error" });
  const warn = "Executors holding the current token are refused from then on (registrations and results); give them the new one.";
  const clear = h("button", { type: "button", class: "secondary", id: "clear-executor-token", onclick: () => change("The group uses the server's executor token now.", async () => {
    if (!confirm(`Make ${g.app_name} use the server's executor token? ${warn}`)) return null;
    return put(`groups/${g.id}/executor-token`, { executor_token: "" });
  }) }, "Use the server's token");
  const show = (grp) => {
    state.textContent = grp.executor_token_set ? "This group's executors use its own token, which cannot be read back." : "This group's executors use the server's executor token.";
    clear.hidden = !grp.executor_token_set;
  };
  // change runs fn (which answers the changed group, or null when the user
  // cancelled) and says how it went.
  async function change(done, fn) {
    err.textContent = "";
    let ng;
    try { ng = await fn(); } catch (e) { err.textContent = describe(e); return; }
    if (!ng) return;
    show(ng);
    onChange(ng);
    flash(done, "ok");
  }
  show(g);
  return h("section", { "aria-labelledby": "executor-token-title", id: "executor-token" },
    h("h2", { id: "executor-token-title" }, "Executor token"),
    state,
    shown,
    h("div", { class: "actions" },
      h("button", { type: "button", id: "rotate-executor-token", onclick: () => change("A new executor token is set: copy it now.", async () => {
        if (!confirm(`Generate a new executor token for ${g.app_name}? ${warn}`)) return null;
        const r = await post(`groups/${g.id}/executor-token/rotate`);
        shown.replaceChildren(shownOnce("executor-token", r.executor_token, "The new executor token", () => shown.replaceChildren()));
        return r.group;
      }) }, "Rotate token"),
      clear),
    h("form", { id: "set-executor-token", "aria-label": "Set the executor token", novalidate: true, onsubmit: (ev) => {
      ev.preventDefault();
      change("The executor token is set.", async () => {
        const ng = await put(`groups/${g.id}/executor-token`, { executor_token: input.value });
        input.value = "";
        shown.replaceChildren();
        return ng;
      });
    } },
    h("label", { for: "executor-token-input" }, "Set a token of your choice"), input,
    h("div", { class: "hint", id: "executor-token-hint" }, "16 to 255 letters, digits, '_' and '-', for example the accessToken your XXL-JOB executors already have."),
    err,
    h("div", { class: "actions" }, h("button", { type: "submit", id: "set-executor-token-submit" }, "Set token"))));
}

async function groupPage(id) {
  const v = visit();
  const [g, execs] = await Promise.all([get(`groups/${id}`), get("executors" + query({ group_id: id }))]);
  const kinds = {};
  for (const m of g.members) (kinds[targetKind(m)] ||= []).push(m);
  const tokenState = h("dd", { id: "group-token-state" }, g.executor_token_set ? "its own" : "the server's");
  v.render(h("h1", {}, g.title || g.app_name),
    can("groups.edit", g.id) ? h("div", { class: "actions" }, h("a", { class: "button", href: `#/groups/${id}/edit`, id: "edit-group" }, "Edit")) : null,
    h("dl", { class: "kv" },
      h("dt", {}, "App name"), h("dd", {}, g.app_name),
      h("dt", {}, "Protocol"), h("dd", {}, g.protocol || "XXL-JOB 2.x–3.4"),
      h("dt", {}, "Accepts registrations"), h("dd", {}, g.accept_registrations ? "yes" : "no"),
      h("dt", {}, "Executor token"), tokenState,
      h("dt", {}, "Updated"), h("dd", {}, when(g.updated_at))),
    can("groups.edit", g.id) ? tokenSection(g, (ng) => { tokenState.textContent = ng.executor_token_set ? "its own" : "the server's"; }) : null,
    h("h2", {}, "Static members"),
    g.members.length ? h("ul", { id: "members" }, Object.entries(kinds).map(([k, ms]) => h("li", {}, `${k}s: `, ms.join(", ")))) : h("p", {}, "None."),
    h("h2", {}, "Registered executors"),
    table({ id: "group-executors" }, executorCols, executorRows(execs.items), "None registered."),
    h("p", {}, h("a", { href: `#/jobs?group_id=${id}` }, "Jobs of this group"), " · ", h("a", { href: `#/runs?group_id=${id}` }, "Runs of this group")));
}

async function groupFormPage(id) {
  const v = visit();
  const editing = id !== undefined;
  const meta = {};
  const g = editing ? await call("GET", `groups/${id}`, undefined, undefined, meta) : { app_name: "", title: "", members: [], protocol: "", accept_registrations: true };
  if (editing ? !can("groups.edit", g.id) : !me().admin) {
    v.render(h("h1", {}, editing ? "Edit group" : "New group"), h("p", { role: "alert" }, editing ? "Editing a group needs the “groups.edit” permission on it." : "Only administrators create groups."));
    return;
  }
  const errors = {};
  const inputs = {};
  const field = (f, label, input, hint) => {
    inputs[f] = input;
    errors[f] = h("div", { class: "field-error", id: `g-${f}-error`, "aria-live": "polite" });
    input.setAttribute("aria-describedby", (hint ? `g-${f}-hint ` : "") + `g-${f}-error`);
    return h("div", {}, input.type === "checkbox" ? h("label", { for: input.id }, input, " ", label) : [h("label", { for: input.id }, label), input],
      hint ? h("div", { class: "hint", id: `g-${f}-hint` }, hint) : null, errors[f]);
  };
  const members = h("textarea", { id: "g-members", name: "members", rows: 4 });
  members.value = g.members.join("\n");
  const formError = h("p", { class: "field-error", role: "alert", id: "group-form-error" });
  const form = h("form", { novalidate: true, onsubmit: async (ev) => {
    ev.preventDefault();
    formError.textContent = "";
    for (const f of Object.keys(errors)) { errors[f].textContent = ""; inputs[f].removeAttribute("aria-invalid"); }
    const body = { app_name: inputs.app_name.value, title: inputs.title.value, members: members.value.split("\n").map((s) => s.trim()).filter(Boolean),
      protocol: inputs.protocol.value, accept_registrations: inputs.accept_registrations.checked };
    // The token is sent only by a new group's form: an edit leaves it alone (the group page changes it).
    if (!editing) body.executor_token = inputs.executor_token.value;
    try {
      const saved = editing ? await call("PUT", `groups/${id}`, body, meta.etag ? { "If-Match": meta.etag } : {}) : await post("groups", body);
      flashNext(`Saved group “${saved.title || saved.app_name}”.`, "info");
      location.hash = `#/groups/${saved.id}`;
    } catch (e) {
      const f = e instanceof APIError && e.field ? e.field.replace(/\[\d+\]$/, "") : "";
      if (errors[f]) { errors[f].textContent = e.message; inputs[f].setAttribute("aria-invalid", "true"); inputs[f].focus(); } else formError.textContent = describe(e);
    }
  } },
    h("div", { class: "grid" },
      field("app_name", "App name", h("input", { id: "g-app_name", name: "app_name", value: g.app_name, readonly: editing || null }), "what executors register under (XXL-JOB appname)"),
      field("title", "Title", h("input", { id: "g-title", name: "title", value: g.title })),
      field("protocol", "Protocol", h("select", { id: "g-protocol", name: "protocol" }, [["", "XXL-JOB 2.x to 3.4"], ["3.5", "XXL-JOB 3.5"]].map(([p, t]) => h("option", { value: p, selected: g.protocol === p }, t)))),
      editing ? null : field("executor_token", "Executor token", h("input", { id: "g-executor_token", type: "password", autocomplete: "off" }),
        "empty uses the server's token; change it later on the group's page"),
      field("accept_registrations", "Accept executor registrations", h("input", { id: "g-accept_registrations", type: "checkbox", checked: !!g.accept_registrations }))),
    field("members", "Static members (one target a line)", members, "http://host:port/, lambda://region/function or local://command"),
    formError,
    h("div", { class: "actions" }, h("button", { type: "submit", id: "save-group" }, editing ? "Save changes" : "Create group"),
      h("a", { class: "button secondary", href: editing ? `#/groups/${id}` : "#/groups" }, "Cancel")));
  v.render(h("h1", {}, editing ? `Edit group “${g.title || g.app_name}”` : "New group"), form);
}

export const routes = [
  { path: /^\/groups$/, page: () => groupsPage() },
  { path: /^\/groups\/new$/, page: () => groupFormPage() },
  { path: /^\/groups\/(\d+)\/edit$/, page: (m) => groupFormPage(m[1]) },
  { path: /^\/groups\/(\d+)$/, page: (m) => groupPage(m[1]) },
];

export const nav = [{ href: "#/groups", label: "Groups and executors" }];
