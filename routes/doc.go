// Package routes picks the target of a trigger among a job's candidate targets,
// with XXL-JOB's ten routing strategies and their exact rules
// (ExecutorRouteStrategyEnum; see docs/xxl-job-reference.md §4.5).
//
// # Strategies
//
// Ringjob names are snake_case; Normalize also accepts XXL-JOB's enum names.
//
//	first            FIRST                  candidates[0]
//	last             LAST                   candidates[n-1]
//	round            ROUND                  per-job counter: starts at random 0..99, +1 per
//	                                        trigger, restarts at random above 1 000 000;
//	                                        pick candidates[count % n]
//	random           RANDOM                 uniform random candidate
//	consistent_hash  CONSISTENT_HASH        ring of 100 virtual nodes per address, node key
//	                                        "SHARD-{address}-NODE-{i}"; hash = MD5, bytes 0..3
//	                                        little-endian as uint32; job key = decimal job id;
//	                                        first node with hash >= job hash, else the lowest
//	lfu              LEAST_FREQUENTLY_USED  per-job address -> count; new addresses start at
//	                                        random(n), counts above 1 000 000 re-randomised,
//	                                        vanished addresses dropped; pick the lowest, +1
//	                                        (ties: first in candidate order)
//	lru              LEAST_RECENTLY_USED    per-job access order; new addresses appended,
//	                                        vanished dropped; pick the eldest, which becomes
//	                                        the most recent
//	failover         FAILOVER               Beat each candidate in order; the first alive wins
//	busyover         BUSYOVER               IdleBeat each candidate in order; the first idle wins
//	sharding         SHARDING_BROADCAST     every candidate; the caller fans out
//
// The state of round, lfu and lru is cleared as a whole every 24 hours of the
// injected clock, counted from the first pick of that strategy (XXL-JOB's
// CACHE_VALID_TIME), and per job by Router.Forget.
//
// # Using a Router
//
// A Router is an instance, built once per scheduler with New; there are no
// package-level maps (unlike XXL-JOB's static router state). Its state is
// keyed by strategy and job id and sits behind a mutex, so Pick is safe from
// many trigger goroutines. Probes run outside the mutex. The state lives in
// memory, so scheduler replicas do not share it, as in XXL-JOB.
//
// Pick returns an ordered list of targets. Order[0] is the target to dispatch
// to. For failover and busyover Order continues with the candidates after the
// winner, which were not probed, so that the dispatcher can move on to the next
// one when a dispatch fails (across target kinds: an HTTP executor, then a
// function); candidates whose probe failed are left out. Every probe is
// returned in Pick.Probes for the run's attempt history, also when all of them
// failed (the error is then a *ProbeError listing each result, as XXL-JOB
// concatenates its beat results).
//
// For sharding, Pick returns every candidate and the caller fans out: it makes
// N dispatches with shard index i of N, where N is the number of live
// executors for an HTTP group (XXL-JOB) or the job's shard count for a
// function, and sends shard i to ShardTarget(candidates, i), which is
// candidates[i], or candidates[0] when i is out of range, as XXL-JOB does.
//
// Candidates are used in the order given. The scheduler passes registered
// executors sorted (as XXL-JOB sorts auto-registered addresses) followed by
// static members in their configured order. An empty list is an error
// (ErrNoCandidates; XXL-JOB: jobconf_trigger_address_empty).
//
// Failover and busyover need a Prober: RegistryProber sends each probe to the
// target driver of the target's scheme. Each probe is bounded by
// Options.ProbeTimeout (3 s by default, XXL-JOB's xxl.job.timeout).
//
// Randomness comes from Options.IntN and time from Options.Clock, so tests
// can be deterministic.
package routes
