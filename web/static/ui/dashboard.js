// The dashboard: runs by outcome over time, jobs, executors, Lambda
// functions and local commands, scheduler replicas, the last failures. It
// refreshes itself every 15 s while it is open.
import uPlot from "../vendor/uplot-1.6.32/uPlot.esm.js";
import { APIError, get, query } from "./api.js";
import { ago, can, describe, h, jobLink, me, seconds, stateBadge, table, visit, when } from "./core.js";

// The outcomes charted, with colours that keep 3:1 contrast on white.
const outcomes = [
  ["succeeded", "Succeeded", "#1a7f37"],
  ["failed", "Failed", "#cf222e"],
  ["timed_out", "Timed out", "#9a6700"],
  ["lost", "Lost", "#8250df"],
  ["misfired", "Misfired", "#0969da"],
  ["killed", "Killed", "#57606a"],
];

const periods = { hour: "Last hour (per minute)", day: "Last day (per hour)", week: "Last week (per hour)" };

function tile(id, label, value, detail) {
  return h("div", { class: "tile", id }, h("div", { class: "tile-label" }, label), h("div", { class: "tile-value" }, value), detail ? h("div", { class: "hint" }, detail) : null);
}

function chart(el, st, v) {
  const xs = st.buckets.map((b) => Date.parse(b.start) / 1000);
  const data = [xs, ...outcomes.map(([k]) => st.buckets.map((b) => b[k]))];
  const width = Math.max(280, el.clientWidth || 600);
  const plot = new uPlot({
    width, height: 240,
    scales: { x: { time: true } },
    axes: [{}, { label: st.resolution === "minute" ? "runs per minute" : "runs per hour" }],
    series: [{}, ...outcomes.map(([, label, stroke]) => ({ label, stroke, width: 2, points: { show: true, size: 5 } }))],
    legend: { live: false },
  }, data, el);
  const resize = () => plot.setSize({ width: Math.max(280, el.clientWidth), height: 240 });
  window.addEventListener("resize", resize);
  v.onLeave(() => { window.removeEventListener("resize", resize); plot.destroy(); });
}

// A text summary of the chart, for screen readers and a quick read.
function totalsList(st) {
  return h("ul", { class: "totals", id: "run-totals" },
    h("li", {}, h("strong", {}, String(st.totals.runs)), " runs"),
    outcomes.map(([k, label]) => h("li", {}, h("strong", {}, String(st.totals[k])), ` ${label.toLowerCase()}`)));
}

async function dashboardPage(m, params) {
  const v = visit();
  const period = periods[params.get("period")] ? params.get("period") : "hour";
  const user = me();
  // Server-wide stats are for admins; others see a group's.
  const groups = (await get("groups" + query({ limit: 500 }))).items;
  const readable = groups.filter((g) => can("runs.read", g.id));
  const groupParam = params.get("group_id") || (user.admin ? "" : String(readable[0]?.id || ""));

  const periodSel = h("select", { id: "stats-period", name: "period" },
    Object.entries(periods).map(([k, label]) => h("option", { value: k, selected: k === period }, label)));
  const groupSel = h("select", { id: "stats-group", name: "group_id" },
    user.admin ? h("option", { value: "" }, "All groups") : null,
    readable.map((g) => h("option", { value: g.id, selected: String(g.id) === groupParam }, g.title || g.app_name)));
  const go = () => { location.hash = "#/" + query({ period: periodSel.value, group_id: groupSel.value }); };
  periodSel.addEventListener("change", go);
  groupSel.addEventListener("change", go);

  const tiles = h("div", { class: "tiles", "aria-live": "polite" });
  const chartBox = h("div", { class: "chart", id: "runs-chart", role: "img", "aria-label": "Runs by outcome over time; the totals follow below the chart" });
  const totals = h("div");
  const failures = h("div");
  const replicas = h("div");
  const shown = v.render(h("h1", {}, "Dashboard"),
    h("div", { class: "toolbar" },
      h("div", {}, h("label", { for: "stats-period" }, "Period"), periodSel),
      readable.length || user.admin ? h("div", {}, h("label", { for: "stats-group" }, "Group"), groupSel) : null),
    tiles,
    h("section", { "aria-labelledby": "chart-title" }, h("h2", { id: "chart-title" }, "Runs by outcome"), chartBox, totals),
    h("section", { "aria-labelledby": "failures-title" }, h("h2", { id: "failures-title" }, "Last failures"), failures),
    user.admin ? h("section", { "aria-labelledby": "replicas-title" }, h("h2", { id: "replicas-title" }, "Scheduler replicas"), replicas) : null);
  if (!shown) return;

  async function load() {
    const gid = groupParam || undefined;
    const [counts, execs, st, failed, reps] = await Promise.all([
      get("job-counts" + query({ group_id: gid })),
      get("executors" + query({ group_id: gid })),
      (groupParam || user.admin) ? get("stats" + query({ period, group_id: gid })).catch((e) => e) : Promise.resolve(null),
      get("runs" + query({ group_id: gid, state: "failed,timed_out,lost", limit: 10 })),
      user.admin ? get("replicas") : Promise.resolve(null),
    ]);
    // Functions (Lambda) and the scheduler's local commands are different
    // things to run jobs on, so each has its tile: distinct targets, and
    // the groups that name them.
    const shownGroups = groups.filter((g) => !gid || String(g.id) === gid);
    const targetsOf = (isKind) => {
      const ts = new Set(shownGroups.flatMap((g) => g.members.filter(isKind)));
      const inGroups = shownGroups.filter((g) => g.members.some(isKind)).length;
      return [String(ts.size), ts.size ? `in ${inGroups} group${inGroups === 1 ? "" : "s"}` : "none in a group"];
    };
    const fresh = execs.items.filter((e) => e.heartbeat_age_ms < 90_000).length;
    tiles.replaceChildren(
      tile("tile-jobs", "Jobs", String(counts.jobs), `${counts.enabled} enabled`),
      tile("tile-executors", "Live executors", String(fresh), `${execs.items.length} registered`),
      tile("tile-functions", "Lambda functions", ...targetsOf((t) => t.startsWith("lambda://") || t.startsWith("arn:"))),
      tile("tile-commands", "Local commands", ...targetsOf((t) => t.startsWith("local://"))),
      ...(reps ? [tile("tile-replicas", "Scheduler replicas", String(reps.items.filter((r) => !r.stopped_at && r.heartbeat_age_ms < 30_000).length), `${reps.items.length} known`)] : []));

    chartBox.replaceChildren();
    if (st instanceof APIError) totals.replaceChildren(h("p", { role: "alert" }, describe(st)));
    else if (!st) totals.replaceChildren(h("p", {}, "You have no role on a group yet, so there is nothing to chart."));
    else {
      chart(chartBox, st, v);
      totals.replaceChildren(totalsList(st),
        h("p", { class: "hint" }, st.counted_at ? `Counted ${ago(st.counted_at)}; the counts are rolled up every few seconds.` : "Not counted yet: the first roll-up comes within seconds of the server's start."));
    }

    failures.replaceChildren(table({ id: "last-failures" }, [["Run"], ["Job"], ["State"], ["When"], ["Message", true]],
      failed.items.map((r) => h("tr", {},
        h("td", {}, h("a", { href: `#/runs/${r.id}` }, `#${r.id}`)),
        h("td", {}, jobLink(r)),
        h("td", {}, stateBadge(r.state)),
        h("td", {}, when(r.finished_at || r.scheduled_at)),
        h("td", { class: "optional" }, (r.message || "—").slice(0, 120)))), "No failures. "));

    if (reps) {
      replicas.replaceChildren(table({ id: "replicas" }, [["Replica"], ["Host", true], ["Heartbeat"], ["Partitions held"], ["Started", true]],
        reps.items.map((r) => h("tr", {},
          h("td", {}, r.id),
          h("td", { class: "optional" }, r.host || "—"),
          h("td", {}, r.stopped_at ? `stopped ${ago(r.stopped_at)}` : seconds(r.heartbeat_age_ms / 1000) + " ago"),
          h("td", {}, r.partitions.length ? r.partitions.join(", ") : "none"),
          h("td", { class: "optional" }, when(r.started_at)))), "No replica has started."));
    }
  }
  await load();
  const timer = setInterval(() => { load().catch(() => {}); }, 15_000);
  v.onLeave(() => clearInterval(timer));
}

export const routes = [
  { path: /^\/$/, page: dashboardPage },
];

export const nav = [{ href: "#/", label: "Dashboard" }];
