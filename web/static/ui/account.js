// The signed-in user's own pages: sign in (and, when configured, sign in
// with SSO), "my tokens". Owned by the access work; the router takes its
// routes and menu links from here.
import { post, setCSRF } from "./api.js";
import { describe, h, loadMe, me, render } from "./core.js";

function loginPage() {
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
      err.textContent = e.status === 401 ? "Wrong user name or password." : describe(e);
    }
  } },
    h("h1", { id: "login-title" }, "Sign in to Ringjob"),
    h("label", { for: "username" }, "User name"),
    h("input", { id: "username", name: "username", autocomplete: "username", required: true }),
    h("label", { for: "password" }, "Password"),
    h("input", { id: "password", name: "password", type: "password", autocomplete: "current-password", required: true }),
    err,
    h("div", { class: "actions" }, h("button", { type: "submit", id: "signin" }, "Sign in")));
  render(form);
  form.querySelector("#username").focus();
}

// public routes are reachable signed out.
export const routes = [
  { path: /^\/login$/, page: loginPage, public: true },
];

export const nav = [];
