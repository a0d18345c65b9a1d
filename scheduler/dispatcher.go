package scheduler

import (
	"context"
	"errors"
	"sync"
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

	fast, slow *pool
	slowJobs   *slowTracker

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
	if d.stopping {
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
	ids := make([]int64, len(take))
	for i, f := range take {
		ids[i] = f.runID
	}
	// A claim statement is not cut short when the scheduler stops: a claim
	// the database may have applied but the caller never heard of would leave
	// runs dispatching that nobody sends. It ends on its own time limit.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	now := d.clock.Now()
	claimed, err := d.st.RunClaimBatch(cctx, store.RunClaimParams{IDs: ids, Owner: d.node, NowMs: now.UnixMilli(), LateAfterMs: d.cfg.LateAfter.Milliseconds()})
	if err != nil {
		d.log.WithError(err).WithField("runs", len(ids)).Error("claim runs; will retry at the next tick")
	}
	got := make(map[int64]bool, len(claimed))
	for _, id := range claimed {
		got[id] = true
	}
	submitted := 0
	for i := range take {
		f := take[i]
		switch {
		case got[f.runID]:
			delete(got, f.runID) // one claim, one dispatch, even if a run was offered twice
			d.metrics.DispatchLag.Observe(now.Sub(time.UnixMilli(f.scheduledMs)).Seconds())
			submitted++
			p.submit(func(ctx context.Context) { d.dispatch(ctx, f) })
		case err != nil:
			failed = append(failed, f) // unknown: try again
		default:
			// Claimed by another node (it took the run over): not ours to fire.
			d.metrics.ClaimLost.Inc()
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
	if errors.Is(err, errRequeue) {
		d.requeueRun(ctx, f)
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
