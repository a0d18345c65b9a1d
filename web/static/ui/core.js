// The console's shared core: DOM helper, page rendering, messages, the
// signed-in user and what they may do, formatting. Page modules import it;
// it imports no page.
import { APIError, get, setCSRF } from "./api.js";

const main = document.getElementById("main");

// ---- the signed-in user (GET /api/v1/me), null when signed out

let current = null;

export const me = () => current;

export async function loadMe() {
  try {
    current = await get("me");
    setCSRF(current.csrf_token);
  } catch (e) {
    if (e instanceof APIError && e.status === 401) current = null;
    else throw e;
  }
  document.dispatchEvent(new CustomEvent("ringjob:me", { detail: current }));
  return current;
}

export function forgetMe() {
  current = null;
  setCSRF("");
}

// can tells whether the signed-in user holds perm on group gid.
export function can(perm, gid) {
  if (!current) return false;
  if (current.admin) return true;
  const perms = current.group_permissions[String(gid)] || [];
  return perms.includes(perm);
}

// canAnywhere tells whether the user holds perm on at least one group.
export const canAnywhere = (perm) => !!current && (current.admin || Object.values(current.group_permissions).some((p) => p.includes(perm)));

// ---- DOM (no innerHTML: every text from the API is text)

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// ---- visits: a page draws only while the user is still on it
//
// Every navigation starts a new visit. A page takes its visit (visit())
// synchronously when the router calls it, before its first await, and
// draws through it: once the user has gone on to another page, the old
// page's answers may still arrive, but v.render draws nothing and the page
// stops there, so a slow page can never replace the next one. Requests are
// never aborted nor their answers dropped: sign-in, sign-out, the session
// and writes always finish as the user asked.

let visitNo = 0;
let leaveHooks = [];

export function visit() {
  const no = visitNo;
  const live = () => no === visitNo;
  return {
    // live tells whether the user is still on this visit's page.
    get live() { return live(); },
    // render replaces the page's content and titles the tab after its h1;
    // it draws nothing and answers false when the user has left.
    render(...nodes) {
      if (!live()) return false;
      main.replaceChildren(...nodes.flat().filter((n) => n !== null && n !== undefined && n !== false));
      const h1 = main.querySelector("h1");
      if (h1) document.title = h1.textContent + " · Ringjob";
      return true;
    },
    // onLeave registers fn (stop a timer, a follower) to run when the user
    // leaves the page; at once when they already have (an answer came late).
    onLeave(fn) {
      if (live()) leaveHooks.push(fn);
      else fn();
    },
  };
}

// leavePage ends the current visit: its hooks run, its late answers draw
// nothing. The router calls it on every page change.
export function leavePage() {
  visitNo++;
  const hooks = leaveHooks;
  leaveHooks = [];
  for (const fn of hooks) {
    try { fn(); } catch (e) { console.error(e); }
  }
}

// ---- messages

let keep = false; // the next page change keeps the message (set after a save)

export function flash(msg, kind) {
  const f = document.getElementById("flash");
  f.textContent = msg || "";
  f.className = kind || "";
  f.hidden = !msg;
}

// flashNext shows msg now and keeps it through the next page change.
export function flashNext(msg, kind) {
  flash(msg, kind);
  keep = true;
}

// clearFlashOnNavigation is called by the router on every page change.
export function clearFlashOnNavigation() {
  if (!keep) flash("");
  keep = false;
}

// describe turns an API error into a sentence a user can act on.
export function describe(err) {
  if (err instanceof APIError) {
    if (err.status === 403 && err.code === "permission_denied") {
      return `You do not have permission to do this${err.permission ? ` (it needs “${err.permission}”)` : ""}. Ask an administrator for a role on the group.`;
    }
    if (err.status === 403 && err.code === "csrf_failed") return "Your session's security token is stale: reload the page and try again.";
    if (err.status === 404) return "Not found: " + err.message;
    if (err.status === 412) return "Someone changed this since you opened it: reload the page to see their changes, then edit again.";
    return err.message;
  }
  return String(err && err.message ? err.message : err);
}

// shownOnce shows a new secret (a token) with a copy button and a Done
// button that calls done; the ids are PREFIX-value, copy-PREFIX, PREFIX-done.
export function shownOnce(prefix, secret, label, done) {
  const value = h("input", { id: `${prefix}-value`, readonly: true, value: secret, "aria-label": label, size: 50 });
  return h("div", { class: "card" },
    h("p", {}, h("strong", {}, "Copy the token now: "), "it is shown only this once."),
    value,
    h("button", { type: "button", id: `copy-${prefix}`, onclick: async () => {
      value.select();
      try { await navigator.clipboard.writeText(secret); } catch { document.execCommand("copy"); }
      flash("Copied.", "ok");
    } }, "Copy"),
    h("button", { type: "button", id: `${prefix}-done`, onclick: done }, "Done"));
}

// ---- formatting: dates in the viewer's zone, durations for people

export function when(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  return d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
}

// whenIn shows iso in the viewer's zone and, when it differs, in zone too.
export function whenIn(iso, zone) {
  if (!iso) return "—";
  const local = when(iso);
  const viewer = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (!zone || zone === viewer) return local;
  try {
    const there = new Date(iso).toLocaleString(undefined, { timeZone: zone, dateStyle: "medium", timeStyle: "medium" });
    return `${local} (${there} in ${zone})`;
  } catch {
    return local;
  }
}

export function seconds(s) {
  s = Math.max(0, Math.round(s));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

export function duration(fromIso, toIso) {
  if (!fromIso) return "—";
  const ms = (toIso ? new Date(toIso) : new Date()) - new Date(fromIso);
  return seconds(ms / 1000);
}

// ago says how long before now iso was ("12 s ago").
export function ago(iso) {
  if (!iso) return "—";
  return seconds((Date.now() - new Date(iso)) / 1000) + " ago";
}

// table builds a scrollable table; cols are [label, optional?] pairs.
export function table(attrs, cols, rows, empty) {
  return h("div", { class: "table-wrap" }, h("table", attrs || {},
    h("thead", {}, h("tr", {}, cols.map(([label, optional]) => h("th", { scope: "col", class: optional ? "optional" : null }, label)))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: cols.length }, empty || "Nothing here.")))));
}

export const finalStates = ["succeeded", "failed", "timed_out", "killed", "lost", "misfired"];

export const stateBadge = (state, id) => h("span", { class: "state " + state, id }, state);

// jobName names a run's job as "app/name" (the API names it on every run);
// a run whose job is gone keeps its id.
export const jobName = (r) => (r.job_name ? `${r.app_name}/${r.job_name}` : `job ${r.job_id}`);
export const jobLink = (r) => h("a", { href: `#/jobs/${r.job_id}`, class: "job-name" }, jobName(r));
