// Administration pages (users, service accounts, tokens, role bindings,
// audit log). Owned by the access work; the router takes its routes and
// menu links from here. Everything here needs admin; the API refuses the
// rest with 403, which the pages show as a readable message.
import { APIError, call, del, get, post, query } from "./api.js";
import { describe, flash, h, me, table, visit, when } from "./core.js";

const isAdmin = () => !!me() && me().admin;

function tabs(here) {
  const items = [["users", "Users"], ["service-accounts", "Service accounts"], ["tokens", "Tokens"], ["bindings", "Role bindings"],
    ["alarms", "Alarm channels"], ["audit", "Audit log"]];
  return h("nav", { class: "tabs", "aria-label": "Administration" }, items.map(([p, label]) =>
    h("a", { href: `#/admin/${p}`, "aria-current": p === here ? "page" : null }, label)));
}

// page renders visit v's admin page, or a readable refusal for non-admins;
// it answers whether the page may go on (an admin, still on the page).
function page(v, here, title, ...body) {
  if (!isAdmin()) {
    v.render(h("h1", {}, title), h("p", { role: "alert", id: "page-error" }, "Administration needs the admin role. Ask an administrator."));
    return false;
  }
  return v.render(h("h1", {}, title), tabs(here), ...body);
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

// ---- name pickers: search as you type, one page at a time through the API

// picker chooses one item by name. search(prefix, cursor) answers
// { items: [{ value, name, text }], next } where next (or null) asks for
// the following page. An input with text but nothing chosen is refused on
// submit (required, or typed and not picked).
function picker(id, label, hint, search, required) {
  let chosen = null;
  let seq = 0;
  let timer = 0;
  let next = null;
  const input = h("input", { id, type: "search", autocomplete: "off", "aria-describedby": `${id}-hint ${id}-chosen`, "aria-controls": `${id}-results` });
  const results = h("ul", { id: `${id}-results`, class: "picker-results", "aria-label": `Matches for “${label}”` });
  const chosenEl = h("p", { id: `${id}-chosen`, class: "hint", "aria-live": "polite" }, "Nothing chosen.");
  function choose(item) {
    clearTimeout(timer); // a search still pending or under way must not show its matches again
    seq++;
    chosen = item;
    chosenEl.textContent = item ? `Chosen: ${item.text}` : "Nothing chosen.";
    results.replaceChildren();
    input.defaultValue = item ? item.name : ""; // a form reset keeps what is chosen
    input.value = input.defaultValue;
  }
  async function load(more) {
    const mine = ++seq;
    let page;
    try {
      page = await search(input.value.trim(), more ? next : null);
    } catch (e) {
      results.replaceChildren(h("li", {}, describe(e)));
      return;
    }
    if (mine !== seq) return; // a later search has started
    next = page.next;
    if (more) results.querySelector(".picker-more")?.remove();
    else results.replaceChildren();
    results.append(...page.items.map((it) => h("li", {},
      h("button", { type: "button", class: "secondary", "data-value": it.value, onclick: () => choose(it) }, it.text))));
    if (!more && page.items.length === 0) results.append(h("li", {}, "No match."));
    if (next) results.append(h("li", { class: "picker-more" }, h("button", { type: "button", class: "secondary", onclick: () => load(true) }, "More…")));
  }
  input.addEventListener("input", () => {
    if (chosen) { chosen = null; chosenEl.textContent = "Nothing chosen."; }
    clearTimeout(timer);
    timer = setTimeout(() => load(false), 200);
  });
  input.addEventListener("focus", () => { if (!chosen && !results.children.length) load(false); });
  return {
    el: h("div", { class: "picker" }, h("label", { for: id }, label), input, h("div", { class: "hint", id: `${id}-hint` }, hint), chosenEl, results),
    choose,
    reset: () => { input.value = ""; choose(null); },
    // value is the chosen item's value, undefined when none; it throws when
    // text was typed and nothing picked, or when required and empty.
    value: () => {
      if (chosen) return chosen.value;
      if (input.value.trim() || required) {
        const e = new Error(`${label}: pick one of the matches below the field (type the start of a name to search).`);
        input.focus();
        throw e;
      }
      return undefined;
    },
  };
}

const principalItem = (p) => ({ value: p.id, name: p.name, text: `${p.name} (${p.kind === "service" ? "service account" : "user"})` });

// searchPrincipals pages through users and service accounts together.
async function searchPrincipals(prefix, cursor) {
  const c = cursor || { users: "", services: "", usersDone: false, servicesDone: false };
  const none = { items: [], next_cursor: "" };
  const [us, ss] = await Promise.all([
    c.usersDone ? none : get("users" + query({ name_prefix: prefix, cursor: c.users, limit: 10 })),
    c.servicesDone ? none : get("service-accounts" + query({ name_prefix: prefix, cursor: c.services, limit: 10 })),
  ]);
  const more = us.next_cursor || ss.next_cursor;
  return {
    items: [...us.items, ...ss.items].map(principalItem),
    next: more ? { users: us.next_cursor, services: ss.next_cursor, usersDone: !us.next_cursor, servicesDone: !ss.next_cursor } : null,
  };
}

async function searchGroups(prefix, cursor) {
  const p = await get("groups" + query({ name_prefix: prefix, cursor: cursor || "", limit: 10 }));
  return {
    items: p.items.map((g) => ({ value: g.id, name: g.app_name, text: g.title && g.title !== g.app_name ? `${g.app_name} (${g.title})` : g.app_name })),
    next: p.next_cursor || null,
  };
}

// principalByID finds a user or service account by id (a link's prefill).
async function principalByID(id) {
  for (const base of ["users", "service-accounts"]) {
    try { return await get(`${base}/${id}`); } catch (e) { if (!(e instanceof APIError && e.status === 404)) throw e; }
  }
  return null;
}

// ---- users and service accounts

async function principalsPage(kind) {
  const v = visit();
  const base = kind === "user" ? "users" : "service-accounts";
  const title = kind === "user" ? "Users" : "Service accounts";
  const list = h("div", { id: base + "-list" });
  // A new user gets a role at once: without one the API refuses it
  // everything. admin holds on every group; the others need a group.
  const roleGroup = picker("nu-group", "Group of the role", "for owner, operator or viewer: type the start of an app name, then pick", searchGroups, false);
  const roleSelect = h("select", { id: "nu-role", name: "role", "aria-describedby": "nu-role-hint" },
    [["viewer", "viewer: reads a group's jobs and runs"], ["operator", "operator: also triggers, starts, stops and kills"],
      ["owner", "owner: also edits the group's jobs"], ["admin", "admin: everything, on every group"], ["", "no role yet (refused everywhere)"]]
      .map(([r, label]) => h("option", { value: r }, label)));
  const form = kind === "user"
    ? formOf("new-user", "New user", [field("nu-name", "Name", { name: "name", required: true, maxlength: 64 }),
      field("nu-email", "Email", { name: "email", type: "email" }),
      field("nu-password", "Password (at least 12 characters)", { name: "password", type: "password", required: true, autocomplete: "new-password" }),
      h("label", { for: "nu-role" }, "Role"), roleSelect,
      h("div", { class: "hint", id: "nu-role-hint" }, "Granted with the user; more roles under Role bindings."),
      roleGroup.el],
    "Create user", async (fd) => {
      const role = fd.get("role");
      const groupID = role && role !== "admin" ? roleGroup.value() : undefined;
      if (role && role !== "admin" && !groupID) throw new Error(`Group of the role: ${role} holds on one group; pick it (or choose admin, or no role).`);
      const u = await post("users", { name: fd.get("name"), email: fd.get("email") || "", password: fd.get("password") });
      if (role) {
        try {
          await post("role-bindings", { role, group_id: groupID, principal_id: u.id });
        } catch (e) {
          await load();
          throw new Error(`User “${u.name}” is created, but the role was not granted: ${describe(e)}`);
        }
      }
      roleGroup.reset();
      flash(role ? `User “${u.name}” is created, with the role ${role}.` : `User “${u.name}” is created, with no role yet.`, "ok");
      await load();
    })
    : formOf("new-sa", "New service account", [field("nsa-name", "Name", { name: "name", required: true, maxlength: 64 })],
      "Create service account", async (fd) => {
        const s = await post("service-accounts", { name: fd.get("name") });
        flash(`Service account “${s.name}” is created; give it a role and a token.`, "ok");
        await load();
      });
  // Editing one principal: rename, and (users) set a new password.
  const editBox = h("div", { id: base + "-edit" });
  function edit(u) {
    const f = formOf("edit-principal", `Edit ${u.name}`, [
      field("ep-name", "Name", { name: "name", required: true, maxlength: 64, value: u.name }),
      ...(kind === "user" && u.source === "local" ? [field("ep-password", "New password (empty: unchanged; at least 12 characters; ends the user's sessions)",
        { name: "password", type: "password", autocomplete: "new-password", minlength: 12 })] : [])],
    "Save", async (fd) => {
      const name = String(fd.get("name")).trim();
      const pw = fd.get("password");
      if (name !== u.name) await call("PATCH", `${base}/${u.id}`, { name });
      if (pw) await call("PUT", `users/${u.id}/password`, { password: pw });
      editBox.replaceChildren();
      flash(name !== u.name && pw ? `Renamed to ${name}; the password is set.` : name !== u.name ? `Renamed to ${name}.` : pw ? `The password of ${name} is set.` : "Nothing changed.", "ok");
      await load();
    });
    f.querySelector(".actions").append(h("button", { type: "button", class: "secondary", onclick: () => editBox.replaceChildren() }, "Cancel"));
    editBox.replaceChildren(f);
    f.querySelector("#ep-name").focus();
  }
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
        h("button", { type: "button", class: "secondary", "aria-label": `Edit ${u.name}`, "data-edit": u.name, onclick: () => edit(u) },
          kind === "user" && u.source === "local" ? "Rename or reset password" : "Rename"),
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
  if (!page(v, base, title, form, editBox, list)) return;
  await load();
}

// ---- tokens (everyone's, or one principal's)

async function tokensPage(_, params) {
  const v = visit();
  const owner = params.get("principal_id") || "";
  const ownerP = owner && isAdmin() ? await principalByID(owner) : null;
  const list = h("div", { id: "admin-tokens" });
  const who = picker("at-principal", "User or service account", "type the start of a name, then pick", searchPrincipals, true);
  if (ownerP) who.choose(principalItem(ownerP));
  const form = formOf("new-admin-token", "New token for a user or service account", [
    who.el,
    field("at-name", "Name", { name: "name", required: true, maxlength: 128 }),
    field("at-days", "Expires after (days, empty = never)", { name: "days", type: "number", min: 1 })],
  "Create token", async (fd) => {
    const days = Number(fd.get("days") || 0);
    const t = await post("tokens", { principal_id: who.value(), name: fd.get("name"), expires_in_sec: days > 0 ? days * 86400 : undefined });
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
      h("td", {}, t.name), h("td", { class: "token-owner" }, !t.principal_id ? "server" : h("a", { href: `#/admin/tokens?principal_id=${t.principal_id}` }, t.principal_name || `principal ${t.principal_id}`)), h("td", {}, h("code", {}, t.prefix + "…")),
      h("td", { class: "optional" }, when(t.last_used_at)),
      h("td", {}, t.revoked_at ? "revoked" : t.expires_at ? when(t.expires_at) : "never"),
      h("td", {}, t.revoked_at ? "" : h("button", { type: "button", class: "danger", "aria-label": `Revoke token ${t.name}`, onclick: async () => {
        if (!confirm(`Revoke token “${t.name}”?`)) return;
        if (await act(() => del(`tokens/${t.id}`), `Token “${t.name}” is revoked.`)) await load();
      } }, "Revoke"))));
    list.replaceChildren(table({ id: "admin-tokens-table" }, [["Name"], ["Owner"], ["Prefix"], ["Last used", true], ["Expires"], [""]], rows),
      cursor ? h("button", { type: "button", onclick: () => load(true) }, "Next page") : "");
  }
  if (!page(v, "tokens", owner ? `Tokens of ${ownerP ? ownerP.name : "principal " + owner}` : "Tokens", secret, form, list)) return;
  await load();
}

// ---- role bindings per group

async function bindingsPage() {
  const v = visit();
  const list = h("div", { id: "bindings-list" });
  const group = picker("nb-group", "Group", "empty for admin, which holds on every group; else type the start of an app name or title, then pick", searchGroups, false);
  const who = picker("nb-principal", "User or service account", "type the start of a name, then pick; or give an SSO group below", searchPrincipals, false);
  const form = formOf("new-binding", "Grant a role", [
    h("label", { for: "nb-role" }, "Role"),
    h("select", { id: "nb-role", name: "role" }, ["viewer", "operator", "owner", "admin"].map((r) => h("option", { value: r }, r))),
    group.el,
    who.el,
    field("nb-sso", "…or SSO group (everyone in this IdP group)", { name: "sso_group", maxlength: 255 })],
  "Grant", async (fd) => {
    await post("role-bindings", { role: fd.get("role"), group_id: group.value(), principal_id: who.value(), sso_group: fd.get("sso_group") || undefined });
    group.reset();
    who.reset();
    flash("The role is granted.", "ok");
    await load();
  });
  async function load() {
    const bs = (await get("role-bindings")).items;
    bs.sort((a, b) => a.group_id - b.group_id || a.role.localeCompare(b.role));
    const rows = bs.map((b) => h("tr", { "data-binding": b.id },
      h("td", {}, b.group_id ? b.group_app_name || `group ${b.group_id}` : "all (admin)"), h("td", {}, b.role),
      h("td", {}, b.principal_id ? `${b.principal_name || "#" + b.principal_id} (${b.principal_kind === "service" ? "service account" : "user"})` : `SSO group “${b.sso_group}”`),
      h("td", {}, h("button", { type: "button", class: "danger", "aria-label": `Revoke binding ${b.id}`, onclick: async () => {
        if (await act(() => del(`role-bindings/${b.id}`), "The role is taken back.")) await load();
      } }, "Revoke"))));
    list.replaceChildren(table({ id: "bindings-table" }, [["Group"], ["Role"], ["Granted to"], [""]], rows));
  }
  if (!page(v, "bindings", "Role bindings", form, list)) return;
  await load();
}

// ---- alarm channels: where they send, and a test alarm through each

async function alarmsPage() {
  const v = visit();
  const list = h("div", { id: "alarm-channels" });
  if (!page(v, "alarms", "Alarm channels",
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

// show renders a value of a change for people: text as it is, the rest as
// JSON; empty ones say so.
const show = (x) => (x === null || x === undefined || x === "" ? "(empty)" : typeof x === "string" ? x : JSON.stringify(x));
const isEmpty = (x) => x === null || x === undefined || x === "" || x === 0 || x === false || (Array.isArray(x) && !x.length)
  || (typeof x === "object" && !Array.isArray(x) && !Object.keys(x).length);

// auditDiff shows an event's changes as a before/after list: a changed
// field as its old value struck out and its new one; a field a create set
// as its value (the defaults it left empty are not listed); anything else
// as field: value.
function auditDiff(e) {
  const ch = e.changes;
  if (!ch || typeof ch !== "object" || !Object.keys(ch).length) return "—";
  const items = [];
  for (const k of Object.keys(ch).sort()) {
    const c = ch[k];
    const pair = c && typeof c === "object" && !Array.isArray(c) && "before" in c && "after" in c;
    if (pair && (c.before === null || c.before === undefined)) {
      if (isEmpty(c.after)) continue;
      items.push(h("li", { "data-field": k }, h("span", { class: "diff-field" }, k), " ", h("ins", {}, show(c.after))));
    } else if (pair) {
      items.push(h("li", { "data-field": k }, h("span", { class: "diff-field" }, k), " ",
        h("del", { "aria-label": `${k} was ${show(c.before)}` }, show(c.before)), " → ", h("ins", { "aria-label": `${k} is now ${show(c.after)}` }, show(c.after))));
    } else {
      items.push(h("li", { "data-field": k }, h("span", { class: "diff-field" }, k), " ", show(c)));
    }
  }
  return items.length ? h("ul", { class: "audit-diff" }, items) : "—";
}

async function auditPage(_, params) {
  const v = visit();
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
      h("td", { class: "optional audit-changes" }, auditDiff(e))));
    list.replaceChildren(table({ id: "audit-table" }, [["When"], ["Who"], ["Action"], ["Object"], ["From", true], ["Changes", true]], rows, "No events match."),
      h("div", { class: "actions" },
        i > 0 ? h("button", { type: "button", id: "audit-prev", onclick: () => load(i - 1) }, "Newer") : "",
        p.next_cursor ? h("button", { type: "button", id: "audit-next", onclick: () => load(i + 1) }, "Older") : ""));
  }
  if (!page(v, "audit", "Audit log", form, list)) return;
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
