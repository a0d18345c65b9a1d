package scheduler

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/routes"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
)

// dispatcher turns due fires into dispatches: it reserves pool capacity and
// queues each run on a trigger pool worker, which routes it, claims it and
// records its hand-off in one compare-and-set (scheduled -> dispatching,
// batched with the other workers' through handoffGate), and calls the
// target's driver.
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
	waits      *runWaits  // requeued runs offered again when what they wait for ends
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
	// held are the runs in this dispatcher's hands (backlog, pool, being
	// sent): still scheduled, so a sweep that reads them back from the
	// ledger must not fire a second copy (fireRead skips them).
	held map[int64]bool
	// inRing reports whether the time ring holds a run (set by the
	// scheduler).
	inRing func(id int64) bool
}

// fireRead fires runs read back from the ledger (taken over, or found
// overdue by the sweep), less those this replica already holds in its ring
// or dispatcher: one copy of a run in memory, so its misfire decision and
// its send are made once.
func (d *dispatcher) fireRead(ctx context.Context, due []fire) {
	d.mu.Lock()
	out := due[:0]
	for _, f := range due {
		if !d.held[f.runID] && (d.inRing == nil || !d.inRing(f.runID)) {
			out = append(out, f)
		}
	}
	d.mu.Unlock()
	d.fire(ctx, out)
}

// release forgets runs that left the dispatcher's hands.
// handing says runs are due and not yet handed to their targets: sends
// wait for the database, so writes that can wait (outcomes) should
// (ledgerWriter.urgent, outcomeWriter.urgent). A pool's queue counts as
// well as the gate, so that a busy second counts as busy from its first
// send to its last hand-off, not only while a statement is in flight.
func (d *dispatcher) handing() bool {
	return d.gate.busy() || d.fast.handing() || d.slow.handing()
}

func (d *dispatcher) release(ids ...int64) {
	d.mu.Lock()
	for _, id := range ids {
		delete(d.held, id)
	}
	d.mu.Unlock()
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
	if d.held == nil {
		d.held = map[int64]bool{}
	}
	for _, f := range due {
		d.held[f.runID] = true
	}
	d.mu.Unlock()
	if len(due) == 0 {
		return
	}
	due = uniqueFires(due)
	due, undecided := d.decideMisfires(ctx, due)
	var fastList, slowList []fire
	for _, f := range due {
		if d.slowJobs.isSlow(f.job.ID) {
			slowList = append(slowList, f)
		} else {
			fastList = append(fastList, f)
		}
	}
	// Late fires whose policy could not be applied (the database did not
	// answer) wait in the backlog, still scheduled: not an outcome.
	rest := undecided
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

// dropAll empties the backlog (the node rejoins) and returns how many it held.
func (d *dispatcher) dropAll() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(d.backlog)
	for _, f := range d.backlog {
		delete(d.held, f.runID)
	}
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

// claimTimeout bounds one hand-off statement (and the batched reads of the
// trigger pool workers). feedFor is how long one tick waits for queue
// places before the rest of its runs waits for the next tick.
const (
	claimTimeout = 10 * time.Second
	feedFor      = 500 * time.Millisecond
)

// fireOn queues fires on p for as long as it has room and returns the ones
// that must wait for the next tick. Nothing is written here: a queued run is
// still scheduled, and its worker claims it and records its hand-off in one
// statement right before the send (see handoffGate). Misfires are recorded
// instead of queued. Room is reserved per fire, so a full pool leaves the
// rest in the backlog, late, never dropped.
func (d *dispatcher) fireOn(ctx context.Context, p *pool, list []fire) (rest []fire) {
	nowMs := d.clock.Now().UnixMilli()
	var send []fire
	var misfired []store.RunUpdate
	var gone []int64
	for _, f := range list {
		if f.misfire == "" {
			send = append(send, f)
			continue
		}
		d.metrics.Misfired.Inc()
		u := store.RunUpdate{ID: f.runID, State: kind.RunMisfired, Message: f.misfire, FinishedMs: nowMs, JobID: f.job.ID}
		gone = append(gone, f.runID)
		if f.claimed || len(f.priorHandoffs) > 0 {
			// Claimed by a replica that died, never handed, or handed by
			// a statement whose answer was lost, never sent: an outcome
			// like any other, from dispatching.
			d.ledger.write(ledgerOp{final: true, u: u})
		}
		if !f.claimed {
			misfired = append(misfired, u)
		}
	}
	if len(misfired) > 0 {
		// Written before anything else of this tick goes out: the run is
		// still scheduled, and a misfire decided but not yet written could
		// otherwise meet a copy of the run read back by the sweep.
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
		if _, err := d.st.RunMisfire(mctx, d.node, misfired); err != nil {
			d.log.WithError(err).WithField("runs", len(misfired)).Error("record misfired runs; the sweep of overdue runs finds them again")
		}
		cancel()
	}
	d.release(gone...)
	// The queue is fed as its workers free places, for up to feedFor, so a
	// second with more runs than the queue holds goes out in one tick
	// instead of one queue's worth per tick.
	deadline := time.Now().Add(feedFor)
	for len(send) > 0 {
		k := p.reserveWithin(len(send), time.Until(deadline))
		if k == 0 {
			break // still full: the rest waits for the next tick
		}
		for i := range send[:k] {
			f := send[i]
			d.jobLocks.enter(f.job.ID, f.runID)
			p.submit(func(ctx context.Context, t *turn) {
				defer d.jobLocks.leave(f.job.ID, f.runID)
				f.turn = t
				d.dispatch(ctx, f)
				// Sent, refused, failed, or back in the ring (which
				// holds it from then on).
				d.release(f.runID)
			})
		}
		send = send[k:]
	}
	return send
}

// settled reports that no queued run can get to its hand-off without
// something outside the dispatcher (see pool.settled).
func (d *dispatcher) settled() bool { return d.fast.settled() && d.slow.settled() }

// dispatch sends one queued run to its target and records the answer.
func (d *dispatcher) dispatch(ctx context.Context, f fire) {
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
	target, res, attempts, handed, err := d.routeAndSend(ctx, f, req)
	d.settle(ctx, f, target, res, attempts, handed, err)
}

// settle records what became of a dispatch. Apart from dispatch, whose
// frame is under every send (deep in the sending goroutine's stack): the
// records and messages built here would enlarge it.
func (d *dispatcher) settle(ctx context.Context, f fire, target string, res targets.Dispatch, attempts []Attempt, handed bool, err error) {
	if handed {
		// Sent: the send slot frees before the answer is queued for the
		// ledger. (A run that failed before a send is handed off below
		// to record its failure; the task's end frees its place.)
		f.turn.done()
	}
	if err != nil && !handed && !errors.Is(err, errRequeue) && !errors.Is(err, errDatabaseBeforeHandoff) && !isHandoffErr(err) {
		// It failed before the send (no target, a block strategy, a
		// routing probe): claimed like a send, so its failure is recorded
		// once, by its owner.
		if herr := d.handOff(ctx, f, ""); herr != nil {
			err = herr
		}
	}
	switch {
	case errors.Is(err, errRequeue):
		// Not handed yet, so nothing to undo in the database: back into
		// the ring for the next tick, or sooner when one of the runs it
		// waits for ends here.
		f.turn.pass(false)
		f.turn = nil
		d.requeue(f)
		var w *waitForRuns
		if errors.As(err, &w) {
			d.waits.add(f.runID, w.ids)
		}
		return
	case !handed && errors.Is(err, errDatabaseBeforeHandoff):
		d.warns.note("database_before_handoff", logrus.Fields{"run_id": f.runID, "job_id": f.job.ID, "error": err.Error()},
			"the database did not answer before a run's hand-off; it stays scheduled and is offered again")
		f.turn.pass(false)
		f.turn = nil
		d.requeue(f)
		return
	case errors.Is(err, errHandoffRefused):
		d.metrics.ClaimLost.Inc()
		d.warns.note("handoff_refused", logrus.Fields{"run_id": f.runID, "job_id": f.job.ID},
			"hand-off refused: the run was taken over by another node or already sent")
		return
	case errors.Is(err, errMisfiredAtHandoff):
		d.metrics.Misfired.Inc()
		d.ledger.write(ledgerOp{final: true, u: store.RunUpdate{ID: f.runID, State: kind.RunMisfired, Message: err.Error(), FinishedMs: d.clock.Now().UnixMilli(), JobID: f.job.ID}})
		return
	case errors.Is(err, errHandoffUnknown):
		// Not handed (the statement failed), or handed without our
		// hearing of it: offered again at the next tick, naming the lost
		// statement's token, so a run it handed is handed to us then and
		// sent once (or recorded misfired from dispatching if too late).
		d.warns.note("handoff_failed", logrus.Fields{"run_id": f.runID, "job_id": f.job.ID, "error": err.Error()},
			"could not record the hand-off of a run; it is offered again at the next tick")
		var unknown *handoffUnknownError
		if errors.As(err, &unknown) && unknown.token != 0 {
			f.priorHandoffs = append(f.priorHandoffs, unknown.token)
		}
		f.turn = nil
		d.requeue(f)
		return
	}
	// XXL-JOB's slow-job rule times the trigger (the driver calls), not
	// the wait for a send slot or the hand-off.
	if f.turn != nil && !f.turn.sendAt.IsZero() {
		d.slowJobs.note(f.job.ID, d.clock.Since(f.turn.sendAt))
	}
	d.metrics.Dispatched.Inc()
	if js := attemptsJSON(attempts); js != "" {
		if aerr := d.st.RunSetAttempts(ctx, f.runID, js); aerr != nil {
			d.warns.note("record_attempts_failed", logrus.Fields{"run_id": f.runID, "error": aerr.Error()}, "record routing attempts")
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

func (d *dispatcher) finish(f fire, target string, out targets.Outcome) {
	d.metrics.Outcomes.WithLabelValues(string(out.State)).Inc()
	d.ledger.write(ledgerOp{final: true, u: store.RunUpdate{
		ID: f.runID, State: out.State, Target: target, Code: out.Code, Message: out.Message, FinishedMs: d.clock.Now().UnixMilli(), JobID: f.job.ID,
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

// isHandoffErr reports whether err is a hand-off's own answer (refused,
// unknown, misfired).
func isHandoffErr(err error) bool {
	return errors.Is(err, errHandoffRefused) || errors.Is(err, errHandoffUnknown) || errors.Is(err, errMisfiredAtHandoff)
}
