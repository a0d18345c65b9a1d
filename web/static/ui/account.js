// The signed-in user's own pages: sign in (and, when configured, sign in
// with SSO), "my account" (own password) and "my tokens". Owned by the
// access work; the router takes its routes and menu links from here.
import { del, get, post, put, query, setCSRF } from "./api.js";
import { describe, flash, h, loadMe, me, shownOnce, table, visit, when } from "./core.js";

async function loginPage() {
  const v = visit();
  if (me()) { location.hash = "#/"; return; }
  const err = h("p", { class: "field-error", id: "login-error", role: "alert" });
  const form = h("form", { class: "card", "aria-labelledby": "login-title", onsubmit: async (ev) => {
    ev.preventDefault();
    err.textContent = "";
    const fd = new FormData(form);
    try {
      const s = await post("session", { username: fd.get("username"), password: fd.get("password") });
      setCSRF(s.csrf_token);
      await loadMe();
      location.hash = "#/";
    } catch (e) {
      err.textContent = e.status === 401 && e.message.includes("disabled") ? "This user is disabled; ask an administrator."
        : e.status === 401 ? "Wrong user name or password." : describe(e);
    }
  } },
    h("h1", { id: "login-title" }, "Sign in to Ringjob"),
    h("label", { for: "username" }, "User name"),
    h("input", { id: "username", name: "username", autocomplete: "username", required: true }),
    h("label", { for: "password" }, "Password"),
    h("input", { id: "password", name: "password", type: "password", autocomplete: "current-password", required: true }),
    err,
    h("div", { class: "actions" }, h("button", { type: "submit", id: "signin" }, "Sign in")));
  if (!v.render(form)) return;
  form.querySelector("#username").focus();
  // Single sign-on, when the server has an identity provider configured.
  try {
    const sso = await get("sso");
    if (sso && sso.enabled) {
      // Relative to the page, so a path prefix is kept; back to the console.
      const back = location.pathname || "/";
      form.append(h("p", { class: "sso" }, h("a", { class: "button", id: "sso-login", href: "api/v1/sso/login" + query({ return_to: back }) }, "Sign in with SSO")));
    }
  } catch (e) { /* no SSO button: the password form still works */ }
}

// ---- my account: own password

async function accountPage() {
  const v = visit();
  const user = me();
  const err = h("p", { class: "field-error", id: "password-error", role: "alert" });
  const form = h("form", { class: "card", "aria-labelledby": "pw-title", onsubmit: async (ev) => {
    ev.preventDefault();
    err.textContent = "";
    const fd = new FormData(form);
    try {
      await put("me/password", { old_password: fd.get("old_password"), new_password: fd.get("new_password") });
      form.reset();
      flash("Your password is changed; your other sessions have ended.", "ok");
    } catch (e) {
      err.textContent = (e.field ? e.field.replace("_", " ") + ": " : "") + describe(e);
    }
  } },
    h("h2", { id: "pw-title" }, "Change your password"),
    h("label", { for: "old-password" }, "Current password"),
    h("input", { id: "old-password", name: "old_password", type: "password", autocomplete: "current-password", required: true }),
    h("label", { for: "new-password" }, "New password (at least 12 characters)"),
    h("input", { id: "new-password", name: "new_password", type: "password", autocomplete: "new-password", required: true, minlength: 12 }),
    err,
    h("div", { class: "actions" }, h("button", { type: "submit", id: "change-password" }, "Change password")));
  v.render(h("h1", {}, "My account"),
    h("p", {}, `Signed in as ${user.name}`, user.admin ? " (admin)" : ""),
    h("p", {}, h("a", { href: "#/account/tokens" }, "My API tokens")),
    user.kind === "user" ? form : null);
}

// ---- my tokens: create (shown once, with copy), list, revoke

async function tokensPage() {
  const v = visit();
  const user = me();
  const list = h("div", { id: "my-tokens" });
  const shown = h("div", { id: "new-token", "aria-live": "polite" });
  async function load() {
    const page = await get("tokens" + query({ principal_id: user.id || undefined, limit: 100 }));
    const rows = page.items.map((t) => h("tr", { "data-token": t.id },
      h("td", {}, t.name), h("td", {}, h("code", {}, t.prefix + "…")),
      h("td", { class: "optional" }, when(t.created_at)), h("td", { class: "optional" }, when(t.last_used_at)),
      h("td", {}, t.revoked_at ? "revoked " + when(t.revoked_at) : t.expires_at ? when(t.expires_at) : "never"),
      h("td", {}, t.revoked_at ? "" : h("button", { type: "button", class: "danger", "aria-label": `Revoke token ${t.name}`, onclick: async () => {
        if (!confirm(`Revoke token “${t.name}”? Programs using it stop working at once.`)) return;
        try { await del(`tokens/${t.id}`); flash(`Token “${t.name}” is revoked.`, "ok"); await load(); } catch (e) { flash(describe(e)); }
      } }, "Revoke"))));
    list.replaceChildren(table({ id: "tokens-table" }, [["Name"], ["Prefix"], ["Created", true], ["Last used", true], ["Expires"], [""]], rows, "You have no tokens."));
  }
  const err = h("p", { class: "field-error", role: "alert", id: "token-error" });
  const form = h("form", { class: "card", "aria-labelledby": "new-token-title", onsubmit: async (ev) => {
    ev.preventDefault();
    err.textContent = "";
    const fd = new FormData(form);
    const days = Number(fd.get("days") || 0);
    try {
      const t = await post("tokens", { name: fd.get("name"), expires_in_sec: days > 0 ? days * 86400 : undefined });
      form.reset();
      shown.replaceChildren(shownOnce("token", t.token, "The new token", () => shown.replaceChildren()));
      await load();
    } catch (e) {
      err.textContent = describe(e);
    }
  } },
    h("h2", { id: "new-token-title" }, "New token"),
    h("label", { for: "token-name" }, "Name (what uses it, e.g. “CI deploy”)"),
    h("input", { id: "token-name", name: "name", required: true, maxlength: 128 }),
    h("label", { for: "token-days" }, "Expires after (days, empty = never)"),
    h("input", { id: "token-days", name: "days", type: "number", min: 1, max: 3650 }),
    err,
    h("div", { class: "actions" }, h("button", { type: "submit", id: "create-token" }, "Create token")));
  if (!v.render(h("h1", {}, "My API tokens"), shown, form, list)) return;
  await load();
}

// public routes are reachable signed out.
export const routes = [
  { path: /^\/login$/, page: loginPage, public: true },
  { path: /^\/account$/, page: accountPage },
  { path: /^\/account\/tokens$/, page: tokensPage },
];

export const nav = [
  { href: "#/account/tokens", label: "My tokens", show: () => !!me() && me().kind !== "token" },
];
