package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/routes"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
)

// Attempt is one step of getting a run onto a target, recorded on the run:
// a routing probe (beat, idle_beat) or a dispatch (run).
type Attempt struct {
	Target string `json:"target"`
	Op     string `json:"op"`
	Error  string `json:"error,omitempty"`
	AtMs   int64  `json:"at_ms"`
}

// attemptsJSON encodes attempts for the run record ("" when there were none
// worth recording: a single successful dispatch).
func attemptsJSON(as []Attempt) string {
	if len(as) == 0 || (len(as) == 1 && as[0].Error == "") {
		return ""
	}
	b, err := json.Marshal(as)
	if err != nil {
		return ""
	}
	return string(b)
}

// routeAndSend chooses the run's target with the job's routing strategy and
// dispatches it. A failed dispatch moves on to the next candidate the
// strategy offers (failover and busyover offer the rest in order, whatever
// their scheme), so one job can fail over from an HTTP executor to a
// function or a local command. Shard runs of a sharding job go to the
// candidate of their index (XXL-JOB: registry[i]).
//
// handed reports whether the run was claimed and handed off (a failure
// before that, such as no target, leaves it scheduled: the caller claims it
// to record the failure).
func (d *dispatcher) routeAndSend(ctx context.Context, f fire, req targets.Request) (target string, res targets.Dispatch, attempts []Attempt, handed bool, err error) {
	// Probes, sends and cover-early kills carry the credential of the run's
	// group, whichever group the address is known as.
	ctx = targets.WithGroup(ctx, f.job.GroupID)
	order, attempts, err := d.route(ctx, &f)
	if err != nil {
		return "", res, attempts, false, err
	}
	var errs []string
	for _, t := range order {
		release, err := d.overlap(ctx, f, t)
		if err != nil {
			return t, res, attempts, handed, err
		}
		atMs := d.clock.Now().UnixMilli()
		drv, derr := d.drivers.For(t)
		if derr == nil && !handed {
			err := d.handOff(ctx, f, t)
			release() // the hand-off is recorded (or refused): the next check sees it
			if err != nil {
				return t, res, attempts, false, err
			}
			handed = true
		} else {
			release()
		}
		if derr == nil {
			derr = f.turn.send(ctx)
		}
		if derr == nil {
			r := req
			r.Target = t
			d.sent.put(f.runID, t)
			f.turn.sending(d.clock.Now())
			rctx, cancel := context.WithTimeout(ctx, d.cfg.DispatchTimeout)
			res, derr = drv.Run(rctx, r)
			cancel()
		}
		if derr == nil {
			attempts = append(attempts, Attempt{Target: t, Op: "run", AtMs: atMs})
			return t, res, attempts, true, nil
		}
		d.sent.drop(f.runID)
		attempts, errs = failedAttempt(attempts, errs, t, atMs, derr)
		target = t
		if ctx.Err() != nil {
			break
		}
	}
	return target, res, attempts, handed, allFailed(errs)
}

// The helpers of routeAndSend below are apart from it because its frame is
// under every send, deep in the sending goroutine's stack: what they keep
// on the stack (probe records, messages) is there only while they run, so
// a sending goroutine's stack stays smaller (and cheaper to grow back after
// the collector shrank it between sends).

// route returns the targets to try for f, in order, and the routing
// probes' attempts.
func (d *dispatcher) route(ctx context.Context, f *fire) (order []string, attempts []Attempt, err error) {
	cands, g, err := d.candidates.list(ctx, f.job)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			err = fmt.Errorf("%w: %w", errDatabaseBeforeHandoff, err)
		}
		return nil, nil, err
	}
	if len(cands) == 0 {
		return nil, nil, fmt.Errorf("group %q has no targets: no executor registered under app name %q and no static members", g.AppName, g.AppName)
	}
	strategy := f.job.RouteStrategy
	if strategy == "" {
		strategy = kind.RouteFirst
	}
	if f.target != "" {
		return []string{f.target}, nil, nil
	}
	if name, _ := kind.ParseRoute(string(strategy)); name == kind.RouteSharding {
		return []string{routes.ShardTarget(cands, f.shardIndex)}, nil, nil
	}
	pick, perr := d.router.Pick(ctx, strategy, f.job.ID, cands)
	for _, p := range pick.Probes {
		a := Attempt{Target: p.Target, Op: p.Kind, AtMs: d.clock.Now().UnixMilli()}
		if p.Err != nil {
			a.Error = p.Err.Error()
		}
		attempts = append(attempts, a)
	}
	if perr != nil {
		return nil, attempts, perr
	}
	return pick.Order, attempts, nil
}

// failedAttempt records a dispatch to target t that failed with err.
func failedAttempt(attempts []Attempt, errs []string, t string, atMs int64, err error) ([]Attempt, []string) {
	attempts = append(attempts, Attempt{Target: t, Op: "run", AtMs: atMs, Error: err.Error()})
	return attempts, append(errs, fmt.Sprintf("%s: %v", t, err))
}

// allFailed is the error of a dispatch whose every target failed (errs:
// one message per target tried).
func allFailed(errs []string) error {
	if len(errs) == 1 {
		return fmt.Errorf("dispatch to %s", errs[0])
	}
	return fmt.Errorf("all %d candidates failed: %s", len(errs), strings.Join(errs, "; "))
}

// Hand-off outcomes that end a dispatch without a send.
var (
	errHandoffRefused = errors.New("hand-off refused")
	errHandoffUnknown = errors.New("hand-off not recorded")
	// errMisfiredAtHandoff: the run was handed over too late to be sent.
	errMisfiredAtHandoff = errors.New("misfired")
)

// handOff claims the run and records that it goes to its target now
// (store.RunHandOff), the last step before the first send: a run another
// node took over, or that another copy of this fire already sent, is not
// sent.
func (d *dispatcher) handOff(ctx context.Context, f fire, target string) error {
	// Admitted when the pool can send it soon (see pool): a handed run
	// should not wait for a send slot.
	if err := f.turn.admit(ctx); err != nil {
		f.turn.pass(false)
		return fmt.Errorf("%w: %w", errHandoffUnknown, err)
	}
	ok, token, err := d.gate.pass(ctx, f.runID, target, f.priorHandoffs)
	f.turn.pass(ok)
	if err != nil {
		return &handoffUnknownError{token: token, err: err}
	}
	if !ok {
		return errHandoffRefused
	}
	d.metrics.DispatchLag.Observe(d.clock.Since(time.UnixMilli(f.scheduledMs)).Seconds())
	// Claimed on time, but the hand-off waited (the database was away): a
	// schedule fire now later than the misfire threshold follows its
	// misfire policy like a fire that left the ring late (misfires.go).
	nowMs := d.clock.Now().UnixMilli()
	if !d.lateFire(&f, nowMs) {
		return nil
	}
	late := (time.Duration(nowMs-f.scheduledMs) * time.Millisecond).Round(time.Millisecond)
	if f.job.MisfirePolicy != kind.MisfireFireOnceNow {
		return fmt.Errorf("%w: due %s ago when its hand-off was recorded (the database did not answer in time); do_nothing skips it",
			errMisfiredAtHandoff, late)
	}
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	keep, err := d.catchUps(qctx, []*fire{&f}, nowMs)
	cancel()
	switch {
	case err != nil:
		// Handed already, so it cannot wait for a later decision: a
		// catch-up sent twice is better than none under fire_once_now.
		d.warns.note("catch_up_unchecked", logrus.Fields{"run_id": f.runID, "job_id": f.job.ID, "error": err.Error()},
			"a late fire_once_now fire is sent as its job's catch-up without checking for a later fire (the database did not answer)")
	case !keep[f.runID]:
		return fmt.Errorf("%w: due %s ago when its hand-off was recorded (the database did not answer in time); fire_once_now fires one catch-up per job, and a later fire of this job is due",
			errMisfiredAtHandoff, late)
	}
	return nil
}

// handoffUnknownError is errHandoffUnknown from a hand-off statement whose
// answer was lost: token marks it, so the next try can tell whether it
// handed the run after all.
type handoffUnknownError struct {
	token int64
	err   error
}

func (e *handoffUnknownError) Error() string {
	return fmt.Sprintf("%v: %v", errHandoffUnknown, e.err)
}

func (e *handoffUnknownError) Is(target error) bool { return target == errHandoffUnknown }
func (e *handoffUnknownError) Unwrap() error        { return e.err }

// errRequeue asks the dispatcher to give the run back to the ring: it must
// wait for the job's running run (serial execution, max in flight).
var errRequeue = errors.New("wait for the job's running run")

// waitForRuns is errRequeue naming the runs the run waits for: when this
// replica records one of their outcomes, the run is offered again at once
// rather than at the next tick (runWaits).
type waitForRuns struct{ ids []int64 }

func (e *waitForRuns) Error() string        { return errRequeue.Error() }
func (e *waitForRuns) Is(target error) bool { return target == errRequeue }

// waitFor is errRequeue naming the runs of others.
func waitFor(others []store.Run) error {
	ids := make([]int64, len(others))
	for i, o := range others {
		ids[i] = o.ID
	}
	return &waitForRuns{ids: ids}
}

// errDatabaseBeforeHandoff: a read the dispatch needs before the hand-off
// (the job's group, its runs in flight) failed. It is not the run's outcome:
// the run stays scheduled and is offered again, and once the database is
// back it follows its misfire policy like any other late fire.
var errDatabaseBeforeHandoff = errors.New("the database did not answer before the hand-off")

// queueless reports whether a target runs every dispatch at once, without
// a queue per job at the target (local processes, functions), as its
// driver declares. HTTP executors apply the block strategy themselves, as
// in XXL-JOB.
func (d *dispatcher) queueless(target string) bool {
	return d.drivers.Capabilities(target).Unqueued
}

// overlap applies the job's max-in-flight limit and, for queueless targets,
// its block strategy: SERIAL_EXECUTION waits for the running run (the run
// goes back to the ring and is offered again next second), DISCARD_LATER
// fails the new run, COVER_EARLY kills the running one first.
//
// When the run may go ahead, it returns with the job's lock held (release
// undoes it): the caller records the hand-off before releasing, so the
// next run of the job to check sees this one as handed.
func (d *dispatcher) overlap(ctx context.Context, f fire, target string) (release func(), err error) {
	check := f.job.MaxInFlight > 0 || (d.queueless(target) && f.job.BlockStrategy != "" && f.shardTotal <= 1)
	if !check {
		return func() {}, nil
	}
	unlock, err := d.jobLocks.lock(ctx, f.job.ID)
	if err != nil {
		return nil, fmt.Errorf("%w: wait for the other dispatches of job %d: %w", errDatabaseBeforeHandoff, f.job.ID, err)
	}
	if err := d.overlapCheck(ctx, f, target); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

func (d *dispatcher) overlapCheck(ctx context.Context, f fire, target string) error {
	all, err := d.inflight.do(ctx, inflightQuery{job: f.job.ID, run: f.runID})
	if err != nil {
		return fmt.Errorf("%w: list the runs of job %d in flight: %w", errDatabaseBeforeHandoff, f.job.ID, err)
	}
	// A run handed to its target counts whatever its id: its "running" may
	// not be recorded yet (accepts are held briefly). Runs not yet handed
	// that are dispatched at the same moment see each other: the lower run
	// id goes first, so two never wait for each other (and order is kept).
	var others []store.Run
	for _, o := range all {
		if o.State == kind.RunRunning || o.HandedMs > 0 || o.ID < f.runID {
			others = append(others, o)
		}
	}
	if f.job.MaxInFlight > 0 && len(others) >= f.job.MaxInFlight {
		return waitFor(others)
	}
	if !d.queueless(target) || f.shardTotal > 1 {
		return nil
	}
	policy := blockPolicyOf(f.job.BlockStrategy)
	if policy.keepsOrder() && d.jobLocks.queuedBefore(f.job.ID, f.runID) {
		// An older run of the job waits in a pool here, not yet handed (so
		// not in the list above): it goes first, as in XXL-JOB's FIFO queue.
		return errRequeue
	}
	if len(others) == 0 {
		return nil
	}
	if err := policy.busy(ctx, d, others); err != errRequeue {
		return err
	}
	return waitFor(others)
}
