// Administration pages (users, service accounts, tokens, role bindings,
// audit log). Owned by the access work; the router takes its routes and
// menu links from here. Everything here needs admin; the API refuses the
// rest with 403, which the pages show as a readable message.
import { call, del, get, post, query } from "./api.js";
import { describe, flash, h, me, render, table, when } from "./core.js";

const isAdmin = () => !!me() && me().admin;

function tabs(here) {
  const items = [["users", "Users"], ["service-accounts", "Service accounts"], ["tokens", "Tokens"], ["bindings", "Role bindings"],
    ["alarms", "Alarm channels"], ["audit", "Audit log"]];
  return h("nav", { class: "tabs", "aria-label": "Administration" }, items.map(([p, label]) =>
    h("a", { href: `#/admin/${p}`, "aria-current": p === here ? "page" : null }, label)));
}

// page renders an admin page, or a readable refusal for non-admins.
function page(here, title, ...body) {
  if (!isAdmin()) {
    render(h("h1", {}, title), h("p", { role: "alert", id: "page-error" }, "Administration needs the admin role. Ask an administrator."));
    return false;
  }
  render(h("h1", {}, title), tabs(here), ...body);
  return true;
}

async function act(fn, ok) {
  try { await fn(); if (ok) flash(ok, "ok"); return true; } catch (e) { flash(describe(e)); return false; }
}

function formOf(id, title, fields, submit, onsubmit) {
  const err = h("p", { class: "field-error", role: "alert", id: id + "-error" });
  const form = h("form", { class: "card", id, "aria-label": title, onsubmit: async (ev) => {
    ev.preventDefault();
    err.textContent = "";
    try { await onsubmit(new FormData(form)); form.reset(); } catch (e) { err.textContent = (e.field ? e.field + ": " : "") + describe(e); }
  } }, h("h2", {}, title), fields.flat(), err, h("div", { class: "actions" }, h("button", { type: "submit", id: id + "-submit" }, submit)));
  return form;
}

const field = (id, label, attrs) => [h("label", { for: id }, label), h("input", { id, ...attrs })];

// ---- users and service accounts

async function principalsPage(kind) {
  const base = kind === "user" ? "users" : "service-accounts";
  const title = kind === "user" ? "Users" : "Service accounts";
  const list = h("div", { id: base + "-list" });
  const form = kind === "user"
    ? formOf("new-user", "New user", [field("nu-name", "Name", { name: "name", required: true, maxlength: 64 }),
      field("nu-email", "Email", { name: "email", type: "email" }),
      field("nu-password", "Password (at least 12 characters)", { name: "password", type: "password", required: true, autocomplete: "new-password" })],
    "Create user", async (fd) => {
      const u = await post("users", { name: fd.get("name"), email: fd.get("email") || "", password: fd.get("password") });
      flash(`User “${u.name}” is created.`, "ok");
      await load();
    })
    : formOf("new-sa", "New service account", [field("nsa-name", "Name", { name: "name", required: true, maxlength: 64 })],
      "Create service account", async (fd) => {
        const s = await post("service-accounts", { name: fd.get("name") });
        flash(`Service account “${s.name}” is created; give it a role and a token.`, "ok");
        await load();
      });
  let cursor = "";
  async function load(next) {
    if (!next) cursor = "";
    const p = await get(base + query({ cursor: next ? cursor : "", limit: 50 }));
    cursor = p.next_cursor;
    const rows = p.items.map((u) => h("tr", { "data-principal": u.id },
      h("td", {}, u.name), h("td", { class: "optional" }, u.email || "—"), h("td", { class: "optional" }, u.source),
      h("td", {}, u.disabled ? "disabled" : "enabled"), h("td", { class: "optional" }, when(u.last_login_at)),
      h("td", {},
        h("button", { type: "button", "aria-label": `${u.disabled ? "Enable" : "Disable"} ${u.name}`, onclick: async () => {
          if (await act(() => call("PATCH", `${base}/${u.id}`, { disabled: !u.disabled }), `${u.name} is ${u.disabled ? "enabled" : "disabled"}.`)) await load();
        } }, u.disabled ? "Enable" : "Disable"),
        " ",
        h("a", { href: `#/admin/tokens?principal_id=${u.id}` }, "Tokens"),
        " ",
        h("button", { type: "button", class: "danger", "aria-label": `Delete ${u.name}`, onclick: async () => {
          if (!confirm(`Delete ${u.name} with its tokens, sessions and role bindings?`)) return;
          if (await act(() => del(`${base}/${u.id}`), `${u.name} is deleted.`)) await load();
        } }, "Delete"))));
    list.replaceChildren(table({ id: base + "-table" }, [["Name"], ["Email", true], ["Source", true], ["State"], ["Last login", true], [""]], rows),
      cursor ? h("button", { type: "button", onclick: () => load(true) }, "Next page") : "");
  }
  if (!page(base, title, form, list)) return;
  await load();
}

// ---- tokens (everyone's, or one principal's)

async function tokensPage(_, params) {
  const owner = params.get("principal_id") || "";
  const list = h("div", { id: "admin-tokens" });
  const form = formOf("new-admin-token", "New token for a user or service account", [
    field("at-principal", "User or service account id", { name: "principal_id", type: "number", min: 1, required: true, value: owner }),
    field("at-name", "Name", { name: "name", required: true, maxlength: 128 }),
    field("at-days", "Expires after (days, empty = never)", { name: "days", type: "number", min: 1 })],
  "Create token", async (fd) => {
    const days = Number(fd.get("days") || 0);
    const t = await post("tokens", { principal_id: Number(fd.get("principal_id")), name: fd.get("name"), expires_in_sec: days > 0 ? days * 86400 : undefined });
    secret.replaceChildren(h("div", { class: "card" }, h("p", {}, h("strong", {}, "Copy the token now: "), "it is shown only this once."),
      h("input", { id: "admin-token-value", readonly: true, value: t.token, size: 50, "aria-label": "The new token" })));
    await load();
  });
  const secret = h("div", { "aria-live": "polite" });
  let cursor = "";
  async function load(next) {
    if (!next) cursor = "";
    const p = await get("tokens" + query({ principal_id: owner, cursor: next ? cursor : "", limit: 50 }));
    cursor = p.next_cursor;
    const rows = p.items.map((t) => h("tr", { "data-token": t.id },
      h("td", {}, t.name), h("td", {}, t.principal_id || "server"), h("td", {}, h("code", {}, t.prefix + "…")),
      h("td", { class: "optional" }, when(t.last_used_at)),
      h("td", {}, t.revoked_at ? "revoked" : t.expires_at ? when(t.expires_at) : "never"),
      h("td", {}, t.revoked_at ? "" : h("button", { type: "button", class: "danger", "aria-label": `Revoke token ${t.name}`, onclick: async () => {
        if (!confirm(`Revoke token “${t.name}”?`)) return;
        if (await act(() => del(`tokens/${t.id}`), `Token “${t.name}” is revoked.`)) await load();
      } }, "Revoke"))));
    list.replaceChildren(table({ id: "admin-tokens-table" }, [["Name"], ["Owner id"], ["Prefix"], ["Last used", true], ["Expires"], [""]], rows),
      cursor ? h("button", { type: "button", onclick: () => load(true) }, "Next page") : "");
  }
  if (!page("tokens", owner ? `Tokens of principal ${owner}` : "Tokens", secret, form, list)) return;
  await load();
}

// ---- role bindings per group

async function bindingsPage() {
  const list = h("div", { id: "bindings-list" });
  const groups = isAdmin() ? (await get("groups" + query({ limit: 200 }))).items : [];
  const groupName = (id) => (groups.find((g) => g.id === id) || {}).app_name || `group ${id}`;
  const groupSelect = h("select", { id: "nb-group", name: "group_id" }, h("option", { value: "" }, "— (admin is global)"),
    groups.map((g) => h("option", { value: g.id }, g.app_name)));
  const form = formOf("new-binding", "Grant a role", [
    h("label", { for: "nb-role" }, "Role"),
    h("select", { id: "nb-role", name: "role" }, ["viewer", "operator", "owner", "admin"].map((r) => h("option", { value: r }, r))),
    h("label", { for: "nb-group" }, "Group"), groupSelect,
    field("nb-principal", "User or service account id", { name: "principal_id", type: "number", min: 1 }),
    field("nb-sso", "…or SSO group (everyone in this IdP group)", { name: "sso_group", maxlength: 255 })],
  "Grant", async (fd) => {
    await post("role-bindings", { role: fd.get("role"), group_id: Number(fd.get("group_id") || 0) || undefined,
      principal_id: Number(fd.get("principal_id") || 0) || undefined, sso_group: fd.get("sso_group") || undefined });
    flash("The role is granted.", "ok");
    await load();
  });
  async function load() {
    const bs = (await get("role-bindings")).items;
    bs.sort((a, b) => a.group_id - b.group_id || a.role.localeCompare(b.role));
    const rows = bs.map((b) => h("tr", { "data-binding": b.id },
      h("td", {}, b.group_id ? groupName(b.group_id) : "all (admin)"), h("td", {}, b.role),
      h("td", {}, b.principal_id ? `principal ${b.principal_id}` : `SSO group “${b.sso_group}”`),
      h("td", {}, h("button", { type: "button", class: "danger", "aria-label": `Revoke binding ${b.id}`, onclick: async () => {
        if (await act(() => del(`role-bindings/${b.id}`), "The role is taken back.")) await load();
      } }, "Revoke"))));
    list.replaceChildren(table({ id: "bindings-table" }, [["Group"], ["Role"], ["Granted to"], [""]], rows));
  }
  if (!page("bindings", "Role bindings", form, list)) return;
  await load();
}

// ---- alarm channels: where they send, and a test alarm through each

async function alarmsPage() {
  const list = h("div", { id: "alarm-channels" });
  if (!page("alarms", "Alarm channels",
    h("p", { class: "hint" }, "Channels are declared under alarms.channels in the server configuration; jobs name the ones they alarm on. ",
      "A test alarm says it is a test and names you; it is sent once, without retries, and recorded in the ",
      h("a", { href: "#/admin/audit?action=alarm_channel.test" }, "audit log"), "."),
    list)) return;
  const chans = (await get("alarm-channels")).items;
  const rows = chans.map((c, i) => {
    const result = h("td", { id: `alarm-result-${i}`, class: "alarm-result", "aria-live": "polite" }, "—");
    const button = h("button", { type: "button", id: `alarm-test-${i}`, "aria-label": `Send test alarm through ${c.name}`, onclick: async () => {
      button.disabled = true;
      result.replaceChildren("Sending…");
      try {
        const r = await post(`alarm-channels/${encodeURIComponent(c.name)}/test`);
        result.replaceChildren(r.status === "sent"
          ? h("span", { class: "state succeeded" }, `sent (${r.took_ms} ms)`)
          : h("span", {}, h("span", { class: "state failed" }, "failed"), " ", r.error));
      } catch (e) {
        result.replaceChildren(h("span", { class: "state failed" }, "not sent"), " ", describe(e));
      } finally {
        button.disabled = false;
      }
    } }, "Send test alarm");
    return h("tr", { "data-channel": c.name }, h("td", {}, c.name), h("td", {}, c.kind || "—"),
      h("td", { class: "optional" }, c.destination || "—"), h("td", {}, button), result);
  });
  list.replaceChildren(table({ id: "alarm-channels-table" }, [["Name"], ["Kind"], ["Sends to", true], [""], ["Last test"]], rows,
    "This server declares no alarm channel (alarms.channels in its configuration)."));
}

// ---- audit log with filters and cursor paging

async function auditPage(_, params) {
  const filters = ["principal", "action", "object_type", "object_id", "from", "to"];
  const form = h("form", { class: "filters", id: "audit-filters", onsubmit: (ev) => {
    ev.preventDefault();
    const fd = new FormData(form);
    const q = {};
    for (const f of filters) {
      let v = fd.get(f);
      if (v && (f === "from" || f === "to")) v = new Date(v).toISOString();
      q[f] = v;
    }
    location.hash = "#/admin/audit" + query(q);
  } },
  filters.map((f) => {
    let v = params.get(f) || "";
    const type = f === "from" || f === "to" ? "datetime-local" : "text";
    if (v && type === "datetime-local") { const d = new Date(v); v = new Date(d - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16); }
    return h("span", {}, h("label", { for: "audit-" + f }, f.replace("_", " ")), h("input", { id: "audit-" + f, name: f, type, value: v }));
  }),
  h("button", { type: "submit", id: "audit-apply" }, "Filter"));
  const list = h("div", { id: "audit-list" });
  const q = {};
  for (const f of filters) q[f] = params.get(f) || "";
  let cursors = [""];
  async function load(i) {
    const p = await get("audit" + query({ ...q, cursor: cursors[i], limit: 50 }));
    if (p.next_cursor) cursors[i + 1] = p.next_cursor;
    const rows = p.items.map((e) => h("tr", { "data-audit": e.id },
      h("td", {}, when(e.at)), h("td", {}, e.principal, e.token_name ? ` (token “${e.token_name}”)` : ""),
      h("td", { class: "audit-action" }, e.action), h("td", {}, `${e.object_type} ${e.object_id}`),
      h("td", { class: "optional" }, e.client_addr),
      h("td", { class: "optional" }, h("code", {}, e.changes ? JSON.stringify(e.changes) : ""))));
    list.replaceChildren(table({ id: "audit-table" }, [["When"], ["Who"], ["Action"], ["Object"], ["From", true], ["Changes", true]], rows, "No events match."),
      h("div", { class: "actions" },
        i > 0 ? h("button", { type: "button", id: "audit-prev", onclick: () => load(i - 1) }, "Newer") : "",
        p.next_cursor ? h("button", { type: "button", id: "audit-next", onclick: () => load(i + 1) }, "Older") : ""));
  }
  if (!page("audit", "Audit log", form, list)) return;
  await load(0);
}

// routes: { path: RegExp, page(match, params) }; the first match wins.
export const routes = [
  { path: /^\/admin(\/users)?$/, page: () => principalsPage("user") },
  { path: /^\/admin\/service-accounts$/, page: () => principalsPage("service") },
  { path: /^\/admin\/tokens$/, page: tokensPage },
  { path: /^\/admin\/bindings$/, page: bindingsPage },
  { path: /^\/admin\/alarms$/, page: alarmsPage },
  { path: /^\/admin\/audit$/, page: auditPage },
];

// nav: { href, label, show() } where show() decides whether the signed-in
// user sees the link.
export const nav = [{ href: "#/admin/users", label: "Administration", show: isAdmin }];
