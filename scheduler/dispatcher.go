package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
	"github.com/sirupsen/logrus"
)

// errStopping is returned for work offered while the scheduler stops.
var errStopping = errors.New("scheduler is stopping")

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

// fireOn claims and submits as many fires as the pool has room for and
// returns the ones that must wait.
func (d *dispatcher) fireOn(ctx context.Context, p *pool, list []fire) (rest []fire) {
	if len(list) == 0 {
		return nil
	}
	k := p.reserve(len(list))
	take, rest := list[:k], list[k:]
	if k == 0 {
		return rest
	}
	ids := make([]int64, len(take))
	for i, f := range take {
		ids[i] = f.runID
	}
	now := d.clock.Now()
	claimed, err := d.st.RunClaimBatch(ctx, store.RunClaimParams{IDs: ids, Owner: d.node, NowMs: now.UnixMilli(), LateAfterMs: d.cfg.LateAfter.Milliseconds()})
	got := make(map[int64]bool, len(claimed))
	for _, id := range claimed {
		got[id] = true
	}
	if err != nil {
		d.log.WithError(err).WithField("runs", len(ids)).Error("claim runs; will retry at the next tick")
	}
	submitted := 0
	for _, f := range take {
		switch {
		case got[f.runID]:
			f := f
			lag := now.Sub(time.UnixMilli(f.scheduledMs))
			d.metrics.DispatchLag.Observe(lag.Seconds())
			submitted++
			p.submit(func(ctx context.Context) { d.dispatch(ctx, f) })
		case err != nil:
			rest = append(rest, f) // unknown: try again
		default:
			// Claimed by another node (it took the run over): not ours to fire.
			d.metrics.ClaimLost.Inc()
		}
	}
	p.release(k - submitted)
	return rest
}

// dispatch sends one claimed run to its target and records the answer.
func (d *dispatcher) dispatch(ctx context.Context, f fire) {
	start := d.clock.Now()
	target, drv, err := d.candidates.pick(ctx, f.job)
	if err != nil {
		d.finish(f, "", targets.Outcome{State: targets.OutcomeFailed, Code: 500, Message: err.Error()})
		return
	}
	req := targets.Request{
		RunID:         f.runID,
		JobID:         f.job.ID,
		Target:        target,
		Handler:       f.job.Handler,
		Params:        f.params,
		ShardIndex:    f.shardIndex,
		ShardTotal:    f.shardTotal,
		Timeout:       time.Duration(f.job.TimeoutSec) * time.Second,
		ScheduledAt:   time.UnixMilli(f.scheduledMs),
		Attempt:       f.attempt,
		BlockStrategy: f.job.BlockStrategy,
	}
	rctx, cancel := context.WithTimeout(ctx, d.cfg.DispatchTimeout)
	res, err := drv.Run(rctx, req)
	cancel()
	took := d.clock.Since(start)
	d.slowJobs.note(f.job.ID, took)
	d.metrics.Dispatched.Inc()
	switch {
	case err != nil:
		d.finish(f, target, targets.Outcome{State: targets.OutcomeFailed, Code: 500, Message: fmt.Sprintf("dispatch to %s: %v", target, err)})
	case res.Done != nil:
		d.finish(f, target, *res.Done)
	default:
		d.ledger.write(ledgerOp{u: store.RunUpdate{ID: f.runID, State: store.RunRunning, Target: target, Message: res.Message}})
	}
}

func (d *dispatcher) finish(f fire, target string, out targets.Outcome) {
	d.metrics.Outcomes.WithLabelValues(out.State).Inc()
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
