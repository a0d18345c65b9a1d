package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/routes"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
	"github.com/sirupsen/logrus"
)

// dispatcher turns due fires into dispatches: it reserves pool capacity,
// claims the runs (scheduled -> dispatching, compare-and-set), and hands each
// claimed run to a trigger pool worker that calls the target's driver.
type dispatcher struct {
	cfg        Config
	node       string
	st         *store.Store
	clock      clockwork.Clock
	log        *logrus.Entry
	drivers    *targets.Registry
	ledger     *ledgerWriter
	metrics    *Metrics
	candidates *candidates
	router     *routes.Router
	requeue    func(fire) // back into the ring
	gate       *handoffGate
	inflight   *batcher[inflightQuery, []store.Run]
	jobLocks   jobLocks     // per job: in-flight check to hand-off
	sent       *sentTargets // dropped by the ledger writer once recorded
	warns      *warnEvery

	fast, slow *pool
	slowJobs   *slowTracker

	// fenced is set while the node rejoins after it was declared dead: it
	// claims and sends nothing until it has reloaded its runs.
	fenced atomic.Bool

	// active is held (shared) by every fire call, so stop can wait for them
	// before the pools close.
	active   sync.RWMutex
	stopping bool

	mu      sync.Mutex
	backlog []fire // due but not yet claimed because a pool was full
}

// fire dispatches due runs, together with the backlog of earlier ticks.
func (d *dispatcher) fire(ctx context.Context, due []fire) {
	d.active.RLock()
	defer d.active.RUnlock()
	if d.stopping || d.fenced.Load() {
		return
	}
	d.mu.Lock()
	if len(d.backlog) > 0 {
		due = append(d.backlog, due...)
		d.backlog = nil
	}
	d.mu.Unlock()
	if len(due) == 0 {
		return
	}
	due = uniqueFires(due)
	d.decideMisfires(due)
	var fastList, slowList []fire
	for _, f := range due {
		if d.slowJobs.isSlow(f.job.ID) {
			slowList = append(slowList, f)
		} else {
			fastList = append(fastList, f)
		}
	}
	var rest []fire
	rest = append(rest, d.fireOn(ctx, d.fast, fastList)...)
	rest = append(rest, d.fireOn(ctx, d.slow, slowList)...)
	if len(rest) > 0 {
		d.metrics.Backpressure.Add(float64(len(rest)))
		d.mu.Lock()
		d.backlog = append(rest, d.backlog...)
		d.mu.Unlock()
	}
	d.metrics.Backlog.Set(float64(d.backlogLen()))
}

// uniqueFires drops repeated run ids (the first copy stays).
func uniqueFires(fs []fire) []fire {
	seen := make(map[int64]bool, len(fs))
	out := fs[:0]
	for _, f := range fs {
		if !seen[f.runID] {
			seen[f.runID] = true
			out = append(out, f)
		}
	}
	return out
}

// decideMisfires applies the misfire policy to schedule fires that leave
// the ring, the backlog or a takeover later than the misfire threshold,
// wherever they waited (a slow database, a full pool, a dead owner):
// do_nothing records each as misfired; fire_once_now fires the latest late
// fire of each job once and records the others as misfired. Manual
// triggers, retries and child runs are sent however late.
func (d *dispatcher) decideMisfires(due []fire) {
	now := d.clock.Now()
	nowMs := now.UnixMilli()
	threshold := d.cfg.MisfireThreshold.Milliseconds()
	late := func(f *fire) bool {
		return f.trigger == kind.TriggerSchedule && f.misfire == "" && nowMs-f.scheduledMs > threshold
	}
	latest := map[int64]int64{} // job -> latest late fire time, for fire_once_now
	for i := range due {
		if f := &due[i]; late(f) && f.job.MisfirePolicy == kind.MisfireFireOnceNow && f.scheduledMs > latest[f.job.ID] {
			latest[f.job.ID] = f.scheduledMs
		}
	}
	for i := range due {
		f := &due[i]
		if !late(f) {
			continue
		}
		where := "it waited in this node's ring or backlog"
		if f.why != "" {
			where = f.why
		}
		by := (time.Duration(nowMs-f.scheduledMs) * time.Millisecond).Round(time.Millisecond)
		switch {
		case f.job.MisfirePolicy != kind.MisfireFireOnceNow:
			f.misfire = fmt.Sprintf("misfired: due %s ago (%s); do_nothing skips it", by, where)
		case f.scheduledMs != latest[f.job.ID]:
			f.misfire = fmt.Sprintf("misfired: due %s ago (%s); fire_once_now fires only the latest missed fire", by, where)
		}
	}
}

// dropAll empties the backlog (the node rejoins) and returns how many it held.
func (d *dispatcher) dropAll() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(d.backlog)
	d.backlog = nil
	return n
}

// firesOf turns runs read from the ledger (taken over, or left claimed) into
// fires. Runs of deleted jobs are recorded as misfired.
func (d *dispatcher) firesOf(ctx context.Context, runs []store.Run, claimed bool, why string) ([]fire, error) {
	ids := make([]int64, 0, len(runs))
	for _, r := range runs {
		ids = append(ids, r.JobID)
	}
	jobs, err := d.st.JobGetMany(ctx, ids)
	if err != nil {
		return nil, err
	}
	nowMs := d.clock.Now().UnixMilli()
	out := make([]fire, 0, len(runs))
	for _, r := range runs {
		j, ok := jobs[r.JobID]
		if !ok {
			if _, err := d.st.RunSetState(ctx, r.ID, r.State, kind.RunMisfired, "job was deleted before its run was sent", nowMs); err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, fire{runID: r.ID, scheduledMs: r.ScheduledMs, shardIndex: r.ShardIndex, shardTotal: r.ShardTotal, attempt: r.Attempt,
			params: r.Params, job: &j, trigger: r.TriggerType, claimed: claimed, why: why})
	}
	return out, nil
}

func (d *dispatcher) backlogLen() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.backlog)
}

// Claims are written in chunks that start small and grow: the first runs of
// a busy second reach their targets after one short statement, while the bulk
// goes in large statements that cost little per run. Up to claimParallel
// chunks are claimed at once (on different rows, so they do not wait for
// each other in the database): a claim statement spends most of its time in
// the database, and one at a time would leave the last runs of a busy second
// waiting for all the claims before theirs.
const (
	firstClaimChunk = 100
	maxClaimChunk   = 1000
	claimParallel   = 3
	claimTimeout    = 10 * time.Second
)

// fireOn claims and submits fires for as long as the pool has room and
// returns the ones that must wait. Room is reserved before each claim, so a
// claimed run always has a queue place. The pool's workers free places while
// claim statements run, so when the queue is full but claims are in flight
// it waits for one to finish and tries again: a short queue still takes a
// large second in a few rounds instead of one queue's worth per tick. Only
// when nothing is in flight and the workers free no place does the rest wait
// for the next tick (unclaimed, so nothing is lost).
func (d *dispatcher) fireOn(ctx context.Context, p *pool, list []fire) (rest []fire) {
	done := make(chan []fire, claimParallel) // each claim's fires that failed
	inflight := 0
	failed := false
	collect := func() {
		if f := <-done; len(f) > 0 {
			// The database did not answer for these: try them, and what is
			// left, again at the next tick.
			failed = true
			rest = append(rest, f...)
		}
		inflight--
	}
	chunk := firstClaimChunk
	for len(list) > 0 && !failed {
		if inflight == claimParallel {
			collect()
			continue
		}
		k := p.reserve(min(len(list), chunk))
		if k == 0 && inflight > 0 {
			collect() // its runs go to the queue, and the workers make room
			continue
		}
		if k == 0 {
			if k = p.reserveSoon(min(len(list), chunk)); k == 0 {
				break // full: the rest waits for the next tick, unclaimed
			}
		}
		take := list[:k]
		list = list[k:]
		inflight++
		go func() { done <- d.claimAndSubmit(ctx, p, take) }()
		chunk = min(2*chunk, maxClaimChunk)
	}
	for inflight > 0 {
		collect()
	}
	return append(rest, list...)
}

// claimAndSubmit claims take (its pool places are reserved) and submits the
// claimed runs. It returns the fires whose claim failed for want of an answer.
func (d *dispatcher) claimAndSubmit(ctx context.Context, p *pool, take []fire) (failed []fire) {
	// A claim statement is not cut short when the scheduler stops: a claim
	// the database may have applied but the caller never heard of would leave
	// runs dispatching that nobody sends. It ends on its own time limit.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	now := d.clock.Now()
	got := make(map[int64]bool, len(take))
	// Fires taken over while claimed need no claim; the others are claimed
	// by token, one statement per token: a fresh one, or the token of an
	// earlier claim of theirs whose answer was lost.
	byToken := map[int64][]int64{}
	for _, f := range take {
		if f.claimed {
			got[f.runID] = true
			continue
		}
		byToken[f.token] = append(byToken[f.token], f.runID)
	}
	var err error
	failedToken := map[int64]int64{}
	for token, ids := range byToken {
		if token == 0 {
			token = store.NewClaimToken()
		}
		claimed, cerr := d.st.RunClaimBatch(cctx, store.RunClaimParams{IDs: ids, Owner: d.node, NowMs: now.UnixMilli(), LateAfterMs: d.cfg.LateAfter.Milliseconds(), Token: token})
		for _, id := range claimed {
			got[id] = true
		}
		if cerr != nil {
			err = cerr
			d.log.WithError(cerr).WithField("runs", len(ids)).Error("claim runs; will retry at the next tick")
			for _, id := range ids {
				failedToken[id] = token
			}
		}
	}
	submitted := 0
	for i := range take {
		f := take[i]
		switch {
		case got[f.runID]:
			delete(got, f.runID) // one claim, one dispatch, even if a run was offered twice
			d.metrics.DispatchLag.Observe(now.Sub(time.UnixMilli(f.scheduledMs)).Seconds())
			if f.misfire != "" {
				d.metrics.Misfired.Inc()
				d.ledger.write(ledgerOp{final: true, u: store.RunUpdate{ID: f.runID, State: kind.RunMisfired, Message: f.misfire, FinishedMs: now.UnixMilli()}})
				continue
			}
			submitted++
			p.submit(func(ctx context.Context) { d.dispatch(ctx, f) })
		case err != nil && failedToken[f.runID] != 0:
			f.token = failedToken[f.runID] // unknown: try again, with the same token
			failed = append(failed, f)
		default:
			// Claimed by another node (it took the run over): not ours to fire.
			d.metrics.ClaimLost.Inc()
			d.warns.note("claim_refused", logrus.Fields{"run_id": f.runID, "job_id": f.job.ID},
				"claim refused: another node took the run over (this node was silent or declared dead)")
		}
	}
	p.release(len(take) - submitted)
	return failed
}

// dispatch sends one claimed run to its target and records the answer.
func (d *dispatcher) dispatch(ctx context.Context, f fire) {
	start := d.clock.Now()
	req := targets.Request{
		RunID:         f.runID,
		JobID:         f.job.ID,
		Handler:       f.job.Handler,
		Params:        f.params,
		ShardIndex:    f.shardIndex,
		ShardTotal:    f.shardTotal,
		Timeout:       time.Duration(f.job.TimeoutSec) * time.Second,
		ScheduledAt:   time.UnixMilli(f.scheduledMs),
		Attempt:       f.attempt,
		BlockStrategy: f.job.BlockStrategy,
	}
	target, res, attempts, err := d.routeAndSend(ctx, f, req)
	switch {
	case errors.Is(err, errRequeue):
		d.requeueRun(ctx, f)
		return
	case errors.Is(err, errHandoffRefused):
		d.metrics.ClaimLost.Inc()
		d.warns.note("handoff_refused", logrus.Fields{"run_id": f.runID, "job_id": f.job.ID},
			"hand-off refused: the run was taken over by another node or already sent")
		return
	case errors.Is(err, errMisfiredAtHandoff):
		d.metrics.Misfired.Inc()
		d.ledger.write(ledgerOp{final: true, u: store.RunUpdate{ID: f.runID, State: kind.RunMisfired, Message: err.Error(), FinishedMs: d.clock.Now().UnixMilli()}})
		return
	case errors.Is(err, errHandoffUnknown):
		d.warns.note("handoff_failed", logrus.Fields{"run_id": f.runID, "job_id": f.job.ID, "error": err.Error()},
			"could not record the hand-off of a claimed run; it stays claimed and is sent by the stuck-claim sweep")
		return
	}
	took := d.clock.Since(start)
	d.slowJobs.note(f.job.ID, took)
	d.metrics.Dispatched.Inc()
	if js := attemptsJSON(attempts); js != "" {
		if aerr := d.st.RunSetAttempts(ctx, f.runID, js); aerr != nil {
			d.log.WithError(aerr).WithField("run_id", f.runID).Warn("record routing attempts")
		}
	}
	switch {
	case err != nil:
		d.warns.note("dispatch_failed", logrus.Fields{"run_id": f.runID, "job_id": f.job.ID, "target": target, "error": err.Error()}, "dispatch failed")
		d.finish(f, target, targets.Outcome{State: kind.RunFailed, Code: 500, Message: err.Error()})
	case res.Done != nil:
		d.finish(f, target, *res.Done)
	default:
		d.ledger.write(ledgerOp{u: store.RunUpdate{ID: f.runID, State: kind.RunRunning, Target: target, Message: res.Message}})
	}
}

// requeueRun gives a claimed run back (dispatching -> scheduled) and puts it
// in the ring, to be offered again at the next tick.
func (d *dispatcher) requeueRun(ctx context.Context, f fire) {
	ok, err := d.st.RunRequeue(ctx, f.runID, d.node)
	if err != nil || !ok {
		d.log.WithError(err).WithField("run_id", f.runID).Warn("give a waiting run back to the ring")
		return
	}
	d.requeue(f)
}

func (d *dispatcher) finish(f fire, target string, out targets.Outcome) {
	d.metrics.Outcomes.WithLabelValues(string(out.State)).Inc()
	d.ledger.write(ledgerOp{final: true, u: store.RunUpdate{
		ID: f.runID, State: out.State, Target: target, Code: out.Code, Message: out.Message, FinishedMs: d.clock.Now().UnixMilli(),
	}})
}

// stop refuses new work from now on and waits for fire calls in progress.
// The backlog stays scheduled in the ledger, owned by this node, for the
// takeover by another node.
func (d *dispatcher) stop() {
	d.active.Lock()
	d.stopping = true
	d.active.Unlock()
}

// slowTracker implements XXL-JOB's slow-job rule: a job with more than N
// dispatches slower than a threshold within the current minute moves to the
// slow pool until the minute changes.
type slowTracker struct {
	clock     clockwork.Clock
	threshold time.Duration
	count     int

	mu     sync.Mutex
	minute int64
	counts map[int64]int
}

func (s *slowTracker) rollover() {
	m := s.clock.Now().Unix() / 60
	if m != s.minute {
		s.minute = m
		s.counts = map[int64]int{}
	}
}

func (s *slowTracker) note(jobID int64, took time.Duration) {
	if took <= s.threshold {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rollover()
	s.counts[jobID]++
}

func (s *slowTracker) isSlow(jobID int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rollover()
	return s.counts[jobID] > s.count
}
