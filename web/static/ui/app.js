// The Ringjob console: a hash-routed single page over the REST API. This
// module only routes: each page module exports its routes (a path pattern
// and a page function) and its links for the main menu.
import { APIError, del } from "./api.js";
import { clearFlashOnNavigation, describe, flash, forgetMe, h, leavePage, loadMe, me, visit } from "./core.js";
import * as account from "./account.js";
import * as admin from "./admin.js";
import * as dashboard from "./dashboard.js";
import * as groups from "./groups.js";
import * as jobs from "./jobs.js";
import * as runs from "./runs.js";
import * as workflows from "./workflows.js";

// Order matters: the first route whose pattern matches the path wins.
const modules = [dashboard, jobs, runs, workflows, groups, admin, account];
const routes = modules.flatMap((m) => m.routes || []);
const menu = modules.flatMap((m) => m.nav || []);

function hashParams() {
  const [path, qs] = location.hash.slice(1).split("?");
  return { path: path || "/", params: new URLSearchParams(qs || "") };
}

function drawNav() {
  const nav = document.getElementById("nav");
  const links = document.getElementById("nav-links");
  const user = me();
  nav.hidden = !user;
  // Signed out, the header offers to sign in (the sign-in page itself needs
  // no link to itself).
  document.getElementById("signin-link").hidden = Boolean(user) || hashParams().path === "/login";
  document.getElementById("menu-toggle").hidden = !user;
  document.querySelector("header.top").classList.remove("menu-open");
  document.getElementById("menu-toggle").setAttribute("aria-expanded", "false");
  const { path } = hashParams();
  links.replaceChildren(...(user ? menu.filter((l) => !l.show || l.show()).map((l) => {
    const here = path === l.href.slice(1) || (l.href !== "#/" && path.startsWith(l.href.slice(1) + "/"));
    return h("a", { href: l.href, "aria-current": here ? "page" : null }, l.label);
  }) : []));
  document.getElementById("who").textContent = user ? `Signed in as ${user.name}${user.admin ? " (admin)" : ""}` : "";
}

async function route() {
  leavePage();
  const v = visit();
  const { path, params } = hashParams();
  drawNav();
  const publicPage = routes.find((r) => r.public && r.path.test(path));
  if (!me() && !publicPage) { location.hash = "#/login"; return; }
  const r = routes.find((x) => x.path.test(path));
  try {
    if (!r) {
      v.render(h("h1", {}, "Page not found"), h("p", {}, h("a", { href: "#/" }, "Go to the dashboard")));
      return;
    }
    await r.page(path.match(r.path), params);
  } catch (e) {
    // A page the user has left says nothing: its error, even a 401 (the
    // session ended, say by signing out), is for the page now shown to
    // find out; acting on it could sign out a user who has just signed in.
    if (!v.live) return;
    if (e instanceof APIError && e.status === 401) { forgetMe(); await loadMe(); location.hash = "#/login"; return; }
    v.render(h("h1", {}, "Something went wrong"), h("p", { role: "alert", id: "page-error" }, describe(e)));
  }
}

document.addEventListener("ringjob:me", drawNav);
document.getElementById("menu-toggle").addEventListener("click", (ev) => {
  const open = document.querySelector("header.top").classList.toggle("menu-open");
  ev.currentTarget.setAttribute("aria-expanded", String(open));
});
document.getElementById("signout").addEventListener("click", async () => {
  try { await del("session"); } catch (e) { /* signed out anyway below */ }
  forgetMe();
  await loadMe();
  location.hash = "#/login";
});
window.addEventListener("hashchange", () => {
  clearFlashOnNavigation();
  route();
});
(async () => {
  try { await loadMe(); } catch (e) { flash(describe(e)); }
  route();
})();
