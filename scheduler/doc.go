// Package scheduler is the heart of Ringjob: it decides when jobs fire and
// makes sure every fire is dispatched exactly once, even when a replica dies.
//
// # Services
//
// A Scheduler runs these services, each with Start/Stop
// (internal/lifecycle), in two lists started in order and stopped in
// reverse (services in scheduler.go): the recording half (heartbeat,
// ledger, hand-off gate, in-flight reader, log and outcome writers) starts
// first and stops last; the firing half (pools, ring, takeover, registry
// monitor, follow-ups, pre-read) stops first, by StopFiring, so that the
// caller can drain in-process targets while outcomes are still recorded.
//
//   - heartbeat (heartbeat.go): keeps the node's row fresh and its liveness
//     lock (MySQL GET_LOCK, a PostgreSQL session-level advisory lock, on a
//     dedicated connection) held; refreshes the set
//     of live peers used to share lock partitions.
//   - pre-read loop (preread.go): once a second takes free lock partitions
//     (SELECT ... FOR UPDATE SKIP LOCKED, in a transaction with a timeout,
//     rolled back on any error), reads the jobs due in the next 3 s, inserts
//     one scheduled run per fire time up to at most 5 s ahead (a frequent
//     job three seconds at a time, staggered by job id so each cycle
//     advances a third of them), advances next fire times, commits, and
//     only then puts the runs in the time ring.
//   - time ring (ring.go): wakes at each second boundary and fires the
//     current slot and any earlier one it missed.
//   - dispatcher and trigger pools (dispatcher.go, pool.go, handoff.go):
//     reserve pool places and queue the runs, still scheduled; right before
//     its send each run is claimed and handed off in one compare-and-set
//     (scheduled -> dispatching with handed_ms), batched across the pool,
//     and only what was handed is sent. A full pool leaves runs scheduled
//     for the next tick (recorded late), never dropped. Slow jobs (more than
//     10 dispatches over 500 ms in a minute) use the slow pool.
//   - ledger writer (ledger.go): batches the state changes that follow a
//     dispatch, each guarded by the state it leaves.
//   - hand-off gate (handoff.go): batches the pools' hand-offs into few
//     statements; in-flight reader (inflight.go) and run log writer batch
//     the questions and log lines of many dispatches (batcher.go).
//   - outcome writer (outcomes.go): the one place outcomes from outside the
//     dispatcher are recorded (executor callbacks, Lambda results, local
//     processes, kills), one compare-and-set per run, in batches. It stops
//     last, after the targets have drained.
//   - takeover (takeover.go, handed.go): adopts the work of dead nodes:
//     their scheduled runs are re-owned and fired or recorded as misfired
//     (misfires.go); the runs they had handed are settled by asking the
//     target whether it received them, and recorded lost only where the
//     target cannot be asked.
//   - registry monitor (registry_monitor.go): drops executors that stopped
//     heartbeating.
//   - follow-ups (followups.go), each found in the database, never only in
//     memory: retries (retries.go), child jobs (children.go), alarms and
//     recoveries (alarms.go, alarmsender.go, recoveries.go), lost runs and
//     run deadlines (lostruns.go), kills asked for on another replica
//     (kills.go), failure deliveries and completion actions
//     (deliveries.go).
//
// Routing and overlap (route.go, block.go, joblock.go) run inside a
// dispatch: the job's group gives the candidates (candidates.go), a route
// picks one, and for targets that run every dispatch at once the job's
// max-in-flight and block strategy decide whether it goes now. Per-run
// warnings go through one rate limiter (warnlog.go).
//
// # Leader states
//
// There is no long-lived leader. In each pre-read cycle a node is, for each
// lock partition, either holding it (inside the locked transaction: reading,
// inserting runs, advancing jobs) or not. The transaction commits only when
// every step succeeded; otherwise it rolls back and nothing it did is
// visible: the job's next fire time is unchanged and the next holder reads
// the same fires again. Runs enter the ring only after the commit, so a ring
// never holds a run the ledger does not have.
//
// # Time
//
// All time comes from an injected clockwork.Clock; tests advance a fake one.
package scheduler
