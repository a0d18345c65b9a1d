package scheduler

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/lifecycle"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/schedule"
	"github.com/ringjob/ringjob/store"
)

// preReader is the schedule loop. Each cycle it locks the partitions it may
// hold, reads the jobs due within the pre-read window, records one scheduled
// run per fire time in the ledger, advances the jobs' next fire times,
// commits, and only then puts the new runs into the time ring.
type preReader struct {
	lifecycle.Loop
	cfg     Config
	node    string
	st      *store.Store
	clock   clockwork.Clock
	log     *logrus.Entry
	ring    *ring
	metrics *Metrics
	peers   *peerView
	cache   *scheduleCache
	// candidates tells how many executors a sharding job fans out over.
	candidates *candidates
	// lastDue is how many due jobs the last cycle read: the next read is
	// sized for about as many (store.JobListDueParams.Expect). Only the
	// cycle touches it, on the loop's goroutine.
	lastDue int
}

func (p *preReader) Start(ctx context.Context) { p.Loop.Start(ctx, p.run) }
func (p *preReader) Stop()                     { p.Loop.Stop() }

func (p *preReader) run(ctx context.Context) {
	for {
		full, err := p.cycle(ctx)
		if err != nil && ctx.Err() == nil {
			p.log.WithError(err).Warn("pre-read cycle failed; retrying at the next interval")
		}
		if full && err == nil {
			continue // more jobs are due than one batch holds
		}
		if !lifecycle.Sleep(ctx, p.clock, p.untilNextCycle()) {
			return
		}
	}
}

// untilNextCycle is the wait until the middle of the next loop interval.
// Replicas cycle in step (the phase is the same for all of them), and half an
// interval away from the ring's second boundaries: the pre-read's insert and
// update of a whole second's fires then do not compete with the claims and
// dispatches of the second that is firing.
func (p *preReader) untilNextCycle() time.Duration {
	iv := int64(p.cfg.LoopInterval)
	phase := iv / 2
	return time.Duration(iv - ((p.clock.Now().UnixNano()-phase)%iv+iv)%iv)
}

// cycle runs one locked pre-read. full reports that the batch limit was hit.
func (p *preReader) cycle(ctx context.Context) (full bool, err error) {
	tctx, cancel := context.WithTimeout(ctx, p.cfg.LockTxTimeout)
	defer cancel()
	lockStart := time.Now() // lock hold time is wall time by nature
	now := p.clock.Now()
	preferred, max := p.peers.partitionPlan(p.cfg.LockPartitions)
	tx, err := p.st.ScheduleLock(tctx, store.ScheduleLockParams{Node: p.node, Preferred: preferred, Max: max, NowMs: now.UnixMilli(),
		IdleTimeoutSec: int((p.cfg.PartitionLease + time.Second - 1) / time.Second)})
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	p.metrics.setHeld(tx.Held(), p.cfg.LockPartitions)
	if len(tx.Held()) == 0 {
		return false, nil
	}
	// "now" is read after the lock is held, as XXL-JOB does.
	now = p.clock.Now()
	nowMs := now.UnixMilli()
	jobs, err := tx.JobListDue(tctx, store.JobListDueParams{UntilMs: nowMs + p.cfg.readAhead().Milliseconds(), Limit: p.cfg.PreReadLimit,
		Expect: p.lastDue})
	if err != nil {
		return false, err
	}
	p.lastDue = len(jobs)
	if len(jobs) == 0 {
		return false, tx.Commit()
	}
	plan := p.planWithin(jobs, now, p.shardCounts(tctx, jobs), p.withDestination(jobs))
	cut := plan.jobs < len(jobs) // the rest: the next cycle, at once
	p.candidates.handoffRooms(plan.inserts)
	ids, err := tx.RunInsertBatch(tctx, plan.inserts)
	if err != nil {
		return false, fmt.Errorf("record %d fires: %w", len(plan.inserts), err)
	}
	if err := tx.JobAdvanceBatch(tctx, plan.advances); err != nil {
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, err
	}
	p.metrics.LockHold.Observe(time.Since(lockStart).Seconds())
	// Committed: the runs exist, owned by this node. Only now do they enter the ring.
	fires := make([]fire, 0, len(ids))
	for i, in := range plan.inserts {
		switch in.State {
		case kind.RunScheduled:
			fires = append(fires, fire{runID: ids[i], scheduledMs: in.ScheduledMs, shardIndex: in.ShardIndex, shardTotal: in.ShardTotal,
				attempt: in.Attempt, params: in.Params, job: plan.jobOf[i], trigger: in.TriggerType})
		case kind.RunMisfired:
			p.metrics.Misfired.Inc()
		}
	}
	p.metrics.Scheduled.Add(float64(len(fires)))
	p.ring.push(fires...)
	// A full read goes on at once, unless it moved no job: the jobs read
	// (the earliest due) then have no fire within the planned window, and
	// neither have the ones after them.
	return cut || (len(jobs) == p.cfg.PreReadLimit && len(plan.advances) > 0), nil
}

// planWithin plans the jobs read over the pre-read window, or over as much
// of it as one transaction records (maxFiresPerCycle): when the whole
// window holds more fires, the window shrinks in proportion to the share of
// the jobs whose fires fit (and at worst to one second), so every job read
// gets its next fires rather than the whole window of some while the
// others' first fires wait for later cycles. The proportion matters: with
// a fixed one-second fallback, 10,000 every-second jobs stayed one second
// ahead for ever (every 5 s window held too many fires), and every cycle
// read thousands of jobs that had no fire within that second.
func (p *preReader) planWithin(jobs []store.Job, now time.Time, shards map[int64]int, dest map[int64]bool) prereadPlan {
	window := p.cfg.PreReadWindow
	plan := p.plan(jobs, now, shards, dest, window)
	for plan.jobs < len(jobs) && window > time.Second {
		w := time.Duration(float64(window) * float64(plan.jobs) / float64(len(jobs)) * 0.9).Truncate(100 * time.Millisecond)
		window = max(time.Second, min(w, window-time.Second))
		plan = p.plan(jobs, now, shards, dest, window)
	}
	return plan
}

type prereadPlan struct {
	jobs     int // how many of the jobs read it covers (see maxFiresPerCycle)
	fires    int // scheduled fires planned (misfires not counted)
	inserts  []store.RunInsert
	jobOf    []*store.Job // the job of each insert
	advances []store.JobAdvance
}

// maxFiresPerJob bounds one job's fires in one window (schedules fire at most
// once a second, so a 5 s window holds at most 6).
const maxFiresPerJob = 64

// maxFiresPerCycle bounds the runs one locked transaction records: the jobs
// beyond it (whole jobs: a job's fires go together) are left unadvanced for
// the next cycle, which follows at once. At 10,000 every-second jobs the
// first cycle (a whole 5 s window) or one after an outage (skipped fires
// recorded as misfired) would otherwise insert 50,000 runs or more in one
// transaction, which on a busy machine ran past lock_tx_timeout, rolled
// back, and left even more to the next try.
const maxFiresPerCycle = 12000

// A misfire records each skipped fire time of a job as a misfired run, up
// to maxSkippedRows per pre-read; beyond that (a long outage of a frequent
// job) they are only counted, up to maxSkippedCount.
const (
	maxSkippedRows  = 120
	maxSkippedCount = 1_000_000
)

// plan applies XXL-JOB's three pre-read cases to each due job:
//   - more than MisfireThreshold late: the misfire policy (do_nothing records
//     the fire as misfired; fire_once_now fires it once now), then the next
//     fire is computed from now;
//   - late by less: every such fire time fires now (late), so a short pause of
//     the scheduler loses nothing;
//   - due within the window: into the time ring at its second.
//
// A job's flexible window moves each fire by the job's offset (the
// schedule from the cache includes it) and moves the misfire threshold by
// the rest of the window: a fire is late only after its window ends. A
// fire older than the job's maximum event age is not caught up.
func (p *preReader) plan(jobs []store.Job, now time.Time, shards map[int64]int, dest map[int64]bool, window time.Duration) prereadPlan {
	pl := prereadPlan{
		inserts:  make([]store.RunInsert, 0, min(len(jobs), maxFiresPerCycle)),
		jobOf:    make([]*store.Job, 0, min(len(jobs), maxFiresPerCycle)),
		advances: make([]store.JobAdvance, 0, len(jobs)),
	}
	nowMs := now.UnixMilli()
	windowEnd := nowMs + window.Milliseconds()
	for i := range jobs {
		if len(pl.inserts) >= maxFiresPerCycle {
			break
		}
		pl.jobs = i + 1
		job := &jobs[i]
		offsetMs := job.Window(job.Name).Offset.Milliseconds()
		add := func(schedMs int64, state kind.RunState, trigger kind.Trigger, msg string) {
			n := max(1, shards[job.ID])
			for i := 0; i < n; i++ {
				pl.inserts = append(pl.inserts, store.RunInsert{
					JobID: job.ID, GroupID: job.GroupID, ScheduledMs: schedMs, ShardIndex: i, ShardTotal: n, Attempt: 0,
					TriggerType: trigger, State: state, Owner: p.node, Handler: job.Handler, Params: job.Params, Message: msg, CreatedMs: nowMs,
					FollowSuccess: len(job.ChildJobIDs) > 0, FollowMisfire: dest[job.ID], WindowOffsetMs: offsetMs,
				})
				pl.jobOf = append(pl.jobOf, job)
			}
		}
		sched, err := p.cache.get(job)
		if err != nil {
			p.log.WithError(err).WithField("job_id", job.ID).Error("job schedule does not parse; stopping the job")
			pl.advances = append(pl.advances, store.JobAdvance{ID: job.ID, NextFireMs: 0, LastFireMs: job.LastFireMs, Disable: true})
			continue
		}
		next, ok := time.UnixMilli(job.NextFireMs), true
		last := job.LastFireMs
		// A job stopped and started again, or given a new schedule, while
		// runs of it were planned (up to last_fire_ms, at most the window
		// ahead) continues after them: those runs are not touched, and a
		// fire time planned before is not recorded twice (the fire key is
		// unique; a second insert failed the whole pre-read, every cycle).
		for n := 0; ok && last > 0 && next.UnixMilli() <= last && n < maxSkippedCount; n++ {
			next, ok = sched.Next(next)
		}
		if !ok {
			pl.advances = append(pl.advances, store.JobAdvance{ID: job.ID, NextFireMs: 0, LastFireMs: last, Disable: true})
			continue
		}
		firstMs := next.UnixMilli()
		if nowMs-firstMs > p.cfg.MisfireThreshold.Milliseconds()+misfireGraceMs(job) {
			late := now.Sub(next).Round(time.Millisecond)
			switch {
			case tooOld(job, firstMs-offsetMs, nowMs):
				add(firstMs, kind.RunMisfired, kind.TriggerSchedule, fmt.Sprintf("misfired by %s; older than the job's max_event_age_sec (%d), so not caught up", late, job.MaxEventAgeSec))
			case job.MisfirePolicy == kind.MisfireFireOnceNow:
				add(firstMs, kind.RunScheduled, kind.TriggerMisfire, fmt.Sprintf("misfired by %s; fire_once_now fires it once", late))
			default:
				add(firstMs, kind.RunMisfired, kind.TriggerSchedule, fmt.Sprintf("misfired by %s; do_nothing skips it", late))
			}
			last = firstMs
			// Continue from now; a fire exactly at now is still on time. The
			// fire times skipped in between are recorded too, one misfired
			// run each (up to maxSkippedRows; beyond, counted per job), so an
			// operator sees every fire that did not run.
			skipped, more := 0, 0
			for t, tok := sched.Next(next); tok && t.Before(now); t, tok = sched.Next(t) {
				if skipped < maxSkippedRows {
					add(t.UnixMilli(), kind.RunMisfired, kind.TriggerSchedule,
						fmt.Sprintf("misfired by %s; skipped: the schedule continues from now (%s)", now.Sub(t).Round(time.Millisecond), job.MisfirePolicy))
					skipped++
				} else if more++; more >= maxSkippedCount {
					break
				}
			}
			p.metrics.Skipped.WithLabelValues(strconv.FormatInt(job.ID, 10)).Add(float64(1 + skipped + more))
			if more > 0 {
				p.log.WithFields(logrus.Fields{"job_id": job.ID, "recorded": skipped + 1, "not_recorded": more}).
					Warn("a job missed more fire times than are recorded one by one; ringjob_fires_skipped_total counts them all")
			}
			next, ok = sched.Next(now.Add(-time.Millisecond))
		}
		end := min(windowEnd, p.cfg.horizonMs(job.ID, nowMs))
		for n := 0; ok && next.UnixMilli() <= end && n < maxFiresPerJob; n++ {
			add(next.UnixMilli(), kind.RunScheduled, kind.TriggerSchedule, "")
			pl.fires++
			last = next.UnixMilli()
			next, ok = sched.Next(next)
		}
		adv := store.JobAdvance{ID: job.ID, LastFireMs: last}
		if ok {
			adv.NextFireMs = next.UnixMilli()
		} else {
			adv.Disable = true
		}
		if adv.Disable || adv.NextFireMs != job.NextFireMs || adv.LastFireMs != job.LastFireMs {
			pl.advances = append(pl.advances, adv) // else no fire within the window: nothing to write
		}
	}
	return pl
}

// planCycles is how many loop intervals of fires the pre-read plans for a
// frequent job at once (k): a job is read once its next fire is within
// readAhead and is then planned up to the end of the window, so a job that
// fires every second is read and its row advanced once every k cycles
// rather than every cycle, and no fire is planned further ahead than
// PreReadWindow. k is the window in intervals less two, so readAhead is
// three intervals: with the default 5 s window and 1 s interval, k = 3 and
// jobs are read 3 s ahead. A window of three intervals or less plans every
// cycle, as before.
func (c Config) planCycles() int64 {
	if c.LoopInterval <= 0 {
		return 1
	}
	return max(1, int64(c.PreReadWindow/c.LoopInterval)-2)
}

// readAhead is how far ahead of now a job's next fire must be for the
// pre-read to read it: the window less k-1 intervals (see planCycles).
func (c Config) readAhead() time.Duration {
	return c.PreReadWindow - time.Duration(c.planCycles()-1)*c.LoopInterval
}

// horizonMs is how far a job read at nowMs is planned: the end of the
// window, less as many intervals as bring the job's next read to a cycle
// of its own slot (its id modulo k, cycles counted from the epoch, the
// same on every replica). A job that fires at least once an interval is
// read again exactly k cycles later, k-1 intervals before the end of the
// window it was planned to; a job read in another slot's cycle (a new or
// edited job, a takeover, a misfire) gets a shorter plan once and then
// keeps to its slot. The jobs of a slot are about 1/k of all, so every
// cycle reads and advances about 1/k of the frequent jobs and records
// about one interval of their fires: the load stays even, with no cycle
// recording k intervals of every job.
func (c Config) horizonMs(jobID, nowMs int64) int64 {
	k := c.planCycles()
	end := nowMs + c.PreReadWindow.Milliseconds()
	if k == 1 {
		return end
	}
	iv := c.LoopInterval.Milliseconds()
	cycle := nowMs / iv
	if nowMs < 0 {
		cycle--
	}
	d := ((cycle-jobID)%k + k) % k
	return end - d*iv
}

// scheduleCache keeps compiled schedules by definition.
type scheduleCache struct {
	mu sync.Mutex
	m  map[string]schedule.Schedule
}

func (c *scheduleCache) get(job *store.Job) (schedule.Schedule, error) {
	key := job.ScheduleType + "\x00" + job.ScheduleConf + "\x00" + job.TimeZone
	if w := job.Window(job.Name); w != (schedule.Window{}) {
		key += fmt.Sprintf("\x00%d\x00%d\x00%d", w.Start.UnixMilli(), w.End.UnixMilli(), w.Offset)
	}
	c.mu.Lock()
	s, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	s, err := schedule.Parse(schedule.Kind(job.ScheduleType), job.ScheduleConf, job.TimeZone)
	if err != nil {
		return nil, err
	}
	s = schedule.Bound(s, job.Window(job.Name))
	c.mu.Lock()
	if c.m == nil || len(c.m) > 10000 {
		c.m = map[string]schedule.Schedule{}
	}
	c.m[key] = s
	c.mu.Unlock()
	return s, nil
}

// withDestination tells which of jobs may have a failure destination,
// their own or their group's, so their misfires are followed up. The
// group is read from the candidates cache only (the dispatcher keeps it
// warm), never from the database: the pre-read's locked transaction must
// not wait on another read. A group not in the cache counts as having one;
// the delivery service then finds none and only marks the follow-up done.
func (p *preReader) withDestination(jobs []store.Job) map[int64]bool {
	out := map[int64]bool{}
	for i := range jobs {
		j := &jobs[i]
		g, cached := p.candidates.cached(j.GroupID)
		if j.FailureDestination != "" || !cached || g.FailureDestination != "" {
			out[j.ID] = true
		}
	}
	return out
}

// misfireGraceMs is how much later than its due time a fire of job may
// leave before it is late: the rest of its flexible window.
func misfireGraceMs(job *store.Job) int64 {
	if job == nil || job.FlexWindowMin <= 0 {
		return 0
	}
	return max(0, int64(job.FlexWindowMin)*60_000-job.Window(job.Name).Offset.Milliseconds())
}

// tooOld reports whether a fire scheduled at schedMs (its schedule time)
// is older at nowMs than the job's maximum event age.
func tooOld(job *store.Job, schedMs, nowMs int64) bool {
	return job.MaxEventAgeSec > 0 && nowMs-schedMs > int64(job.MaxEventAgeSec)*1000
}

// shardCounts says how many runs one fire of each sharding job fans out to
// (jobs missing from the map fire once); see candidates.shards.
func (p *preReader) shardCounts(ctx context.Context, jobs []store.Job) map[int64]int {
	out := map[int64]int{}
	for i := range jobs {
		if n := p.candidates.shards(ctx, &jobs[i], p.log); n > 1 {
			out[jobs[i].ID] = n
		}
	}
	return out
}
