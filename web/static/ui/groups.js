// Groups and executors: each group's static members (HTTP executors,
// Lambda functions, local commands) and the executors that registered by
// heartbeat; create and edit groups.
import { APIError, call, get, post, query } from "./api.js";
import { can, describe, flashNext, h, me, render, seconds, table, when } from "./core.js";

const targetKind = (t) => (t.startsWith("lambda://") ? "Lambda function" : t.startsWith("local://") ? "local command" : "HTTP executor");

function executorRows(items) {
  return items.map((e) => h("tr", {},
    h("td", {}, e.address),
    h("td", {}, e.app_name),
    h("td", { class: "optional" }, e.protocol || "XXL-JOB 2.x–3.4"),
    h("td", { class: "optional" }, when(e.registered_at)),
    h("td", {}, seconds(e.heartbeat_age_ms / 1000) + " ago")));
}
const executorCols = [["Address"], ["App name"], ["Protocol", true], ["Registered", true], ["Last heartbeat"]];

async function groupsPage() {
  const [groups, execs] = await Promise.all([get("groups" + query({ limit: 500 })), get("executors")]);
  const byApp = {};
  for (const e of execs.items) (byApp[e.app_name] ||= []).push(e);
  render(h("h1", {}, "Groups and executors"),
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

async function groupPage(id) {
  const [g, execs] = await Promise.all([get(`groups/${id}`), get("executors" + query({ group_id: id }))]);
  const kinds = {};
  for (const m of g.members) (kinds[targetKind(m)] ||= []).push(m);
  render(h("h1", {}, g.title || g.app_name),
    can("groups.edit", g.id) ? h("div", { class: "actions" }, h("a", { class: "button", href: `#/groups/${id}/edit`, id: "edit-group" }, "Edit")) : null,
    h("dl", { class: "kv" },
      h("dt", {}, "App name"), h("dd", {}, g.app_name),
      h("dt", {}, "Protocol"), h("dd", {}, g.protocol || "XXL-JOB 2.x–3.4"),
      h("dt", {}, "Accepts registrations"), h("dd", {}, g.accept_registrations ? "yes" : "no"),
      h("dt", {}, "Executor token"), h("dd", {}, g.executor_token_set ? "its own" : "the server's"),
      h("dt", {}, "Updated"), h("dd", {}, when(g.updated_at))),
    h("h2", {}, "Static members"),
    g.members.length ? h("ul", { id: "members" }, Object.entries(kinds).map(([k, ms]) => h("li", {}, `${k}s: `, ms.join(", ")))) : h("p", {}, "None."),
    h("h2", {}, "Registered executors"),
    table({ id: "group-executors" }, executorCols, executorRows(execs.items), "None registered."),
    h("p", {}, h("a", { href: `#/jobs?group_id=${id}` }, "Jobs of this group"), " · ", h("a", { href: `#/runs?group_id=${id}` }, "Runs of this group")));
}

async function groupFormPage(id) {
  const editing = id !== undefined;
  const meta = {};
  const g = editing ? await call("GET", `groups/${id}`, undefined, undefined, meta) : { app_name: "", title: "", members: [], protocol: "", accept_registrations: true };
  if (editing ? !can("groups.edit", g.id) : !me().admin) {
    render(h("h1", {}, editing ? "Edit group" : "New group"), h("p", { role: "alert" }, editing ? "Editing a group needs the “groups.edit” permission on it." : "Only administrators create groups."));
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
      protocol: inputs.protocol.value, executor_token: inputs.executor_token.value, accept_registrations: inputs.accept_registrations.checked };
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
      field("executor_token", "Executor token", h("input", { id: "g-executor_token", type: "password", autocomplete: "off" }),
        g.executor_token_set ? "This group has its own token, which cannot be read back: enter it again to keep it; empty uses the server's token." : "empty uses the server's token"),
      field("accept_registrations", "Accept executor registrations", h("input", { id: "g-accept_registrations", type: "checkbox", checked: !!g.accept_registrations }))),
    field("members", "Static members (one target a line)", members, "http://host:port/, lambda://region/function or local://command"),
    formError,
    h("div", { class: "actions" }, h("button", { type: "submit", id: "save-group" }, editing ? "Save changes" : "Create group"),
      h("a", { class: "button secondary", href: editing ? `#/groups/${id}` : "#/groups" }, "Cancel")));
  render(h("h1", {}, editing ? `Edit group “${g.title || g.app_name}”` : "New group"), form);
}

export const routes = [
  { path: /^\/groups$/, page: () => groupsPage() },
  { path: /^\/groups\/new$/, page: () => groupFormPage() },
  { path: /^\/groups\/(\d+)\/edit$/, page: (m) => groupFormPage(m[1]) },
  { path: /^\/groups\/(\d+)$/, page: (m) => groupPage(m[1]) },
];

export const nav = [{ href: "#/groups", label: "Groups and executors" }];
