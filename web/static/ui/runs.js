// Runs: the run page with its live log.
import { get, post, query } from "./api.js";
import { can, describe, duration, finalStates, flash, h, onLeave, render, when } from "./core.js";

// ---- run page with a live log

async function runPage(id) {
  let run = await get(`runs/${id}`);
  const log = h("pre", { class: "log", id: "run-log", tabindex: 0, "aria-label": "Run log", "aria-live": "off" });
  const status = h("p", { class: "hint", id: "log-status", "aria-live": "polite" });
  const details = h("dl", { class: "kv", id: "run-details" });
  const actions = h("div", { class: "actions" });
  function showRun() {
    details.replaceChildren(...[
      h("dt", {}, "State"), h("dd", {}, h("span", { class: "state " + run.state, id: "run-state" }, run.state)),
      h("dt", {}, "Job"), h("dd", {}, h("a", { href: `#/jobs/${run.job_id}` }, `job ${run.job_id}`)),
      h("dt", {}, "Trigger"), h("dd", {}, run.trigger_type),
      h("dt", {}, "Params"), h("dd", { id: "run-params" }, run.params || "—"),
      h("dt", {}, "Target"), h("dd", {}, run.target || "—"),
      h("dt", {}, "Scheduled"), h("dd", {}, when(run.scheduled_at)),
      h("dt", {}, "Dispatched"), h("dd", {}, when(run.dispatched_at)),
      h("dt", {}, "Finished"), h("dd", {}, when(run.finished_at)),
      h("dt", {}, "Took"), h("dd", {}, duration(run.dispatched_at, run.finished_at)),
      run.shard_total > 1 ? [h("dt", {}, "Shard"), h("dd", {}, `${run.shard_index + 1} of ${run.shard_total}`)] : null,
      h("dt", {}, "Message"), h("dd", {}, run.message || "—")].flat().filter(Boolean));
    actions.replaceChildren();
    const final = finalStates.includes(run.state);
    if (!final && can("runs.kill", run.group_id)) {
      actions.append(h("button", { type: "button", class: "danger", id: "kill-run", onclick: async () => {
        if (!confirm(`Kill run #${run.id}?`)) return;
        try { run = await post(`runs/${id}/kill`); showRun(); } catch (e) { flash(describe(e)); }
      } }, "Kill run"));
    }
  }
  showRun();
  render(h("h1", {}, `Run #${run.id}`), actions, details, h("h2", {}, "Log"), status, log);

  // Follow the log: ask for the lines after the last one we have until the
  // API says the run has finished and no more lines follow.
  let nextLine = 1;
  let stopped = false;
  onLeave(() => { stopped = true; });
  while (!stopped) {
    try {
      const chunk = await get(`runs/${id}/log` + query({ from_line: nextLine }));
      if (chunk.content) {
        const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
        log.append(chunk.content.endsWith("\n") ? chunk.content : chunk.content + "\n");
        if (atBottom) log.scrollTop = log.scrollHeight;
      }
      if (chunk.to_line >= nextLine) nextLine = chunk.to_line + 1;
      run = await get(`runs/${id}`);
      showRun();
      if (chunk.end) { status.textContent = "The run has finished; this is its whole log."; break; }
      status.textContent = "Following the log live…";
    } catch (e) {
      status.textContent = "The log cannot be read now: " + describe(e);
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

export const routes = [
  { path: /^\/runs\/(\d+)$/, page: (m) => runPage(m[1]) },
];

export const nav = [];
