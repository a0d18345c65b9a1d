package targettest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/targets"
)

// Harness tells the conformance suite how to build the driver under test and
// which targets to run. Zero durations take the defaults noted.
type Harness struct {
	// NewDriver builds a fresh driver for one check, reporting to sink, and
	// registers its shutdown with t.Cleanup. Required.
	NewDriver func(t *testing.T, sink targets.Sink) targets.Driver

	// Succeed is a target whose runs succeed and log at least two lines. Required.
	Succeed string
	// SucceedLog, if set, are lines the Succeed run's log must contain, in order
	// (other lines may come between them).
	SucceedLog []string
	// Fail is a target whose runs fail. Required.
	Fail string
	// Long is a target whose runs keep running until they are killed or time
	// out (for at least a minute). Required.
	Long string
	// Unknown is a well-formed target of the driver's scheme that the driver
	// does not know. Empty skips the unknown-target check.
	Unknown string

	// Timeout is the Request.Timeout of the timeout check. Default 300ms.
	Timeout time.Duration
	// Wait bounds every wait for an outcome. Default 20s.
	Wait time.Duration

	// SkipKill skips the kill check, for drivers that cannot stop a run
	// (Lambda); they still must not return an error from Kill.
	SkipKill bool
	// SkipIdleBeat skips the IdleBeat assertions, for drivers whose targets
	// cannot tell whether they run a job.
	SkipIdleBeat bool
}

// Defaults of the Harness durations.
const (
	DefaultTimeout = 300 * time.Millisecond
	DefaultWait    = 20 * time.Second
)

func (h *Harness) setDefaults() {
	if h.Timeout <= 0 {
		h.Timeout = DefaultTimeout
	}
	if h.Wait <= 0 {
		h.Wait = DefaultWait
	}
}

func (h *Harness) validate() error {
	var missing []string
	if h.NewDriver == nil {
		missing = append(missing, "NewDriver")
	}
	if h.Succeed == "" {
		missing = append(missing, "Succeed")
	}
	if h.Fail == "" {
		missing = append(missing, "Fail")
	}
	if h.Long == "" {
		missing = append(missing, "Long")
	}
	if len(missing) > 0 {
		return errors.New("targettest.Harness: " + strings.Join(missing, ", ") + " must be set")
	}
	return nil
}

// Run runs the conformance suite against the driver the harness builds. Each
// check is a parallel subtest with its own driver and MemorySink.
func Run(t *testing.T, h Harness) {
	t.Helper()
	h.setDefaults()
	if err := h.validate(); err != nil {
		t.Fatal(err)
	}
	s := &suite{h: h}
	s.nextID.Store(1_000_000)

	t.Run("success reaches succeeded once", s.testSuccess)
	t.Run("failure reaches failed with a message", s.testFailure)
	t.Run("kill ends a running run as killed", s.testKill)
	t.Run("kill of an unknown run is not an error", s.testKillUnknown)
	t.Run("timeout ends a run as timed_out", s.testTimeout)
	t.Run("beat on a valid target", s.testBeat)
	t.Run("log reads lines from a line", s.testLog)
	t.Run("unknown target is an error", s.testUnknown)
	t.Run("concurrent runs report separately", s.testConcurrent)
}

type suite struct {
	h      Harness
	nextID atomic.Int64
}

// bundle is what one check works with.
type bundle struct {
	t      *testing.T
	h      Harness
	s      *suite
	ctx    context.Context
	sink   *MemorySink
	driver targets.Driver

	mu    sync.Mutex
	async map[int64]bool // accepted runs: true when Run returned Done == nil
}

func (s *suite) setup(t *testing.T) *bundle {
	t.Helper()
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), s.h.Wait)
	b := &bundle{t: t, h: s.h, s: s, ctx: ctx, sink: NewMemorySink(), async: map[int64]bool{}}
	// Registered before NewDriver, so it runs after the driver's own cleanup
	// (Close): by then every outcome a driver will ever report is in.
	t.Cleanup(func() {
		cancel()
		b.checkCompletions()
	})
	b.driver = s.h.NewDriver(t, b.sink)
	if b.driver == nil {
		t.Fatal("Harness.NewDriver returned a nil driver")
	}
	return b
}

// checkCompletions asserts exactly-once reporting: a run finished through
// Dispatch.Done is never completed through the sink, and an asynchronous run
// is completed at most once (the checks that wait for it make it at least once).
func (b *bundle) checkCompletions() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for runID, async := range b.async {
		n := b.sink.Completions(runID)
		switch {
		case !async && n != 0:
			b.t.Errorf("run %d finished through Dispatch.Done and was also completed through the sink %d time(s)", runID, n)
		case async && n > 1:
			b.t.Errorf("run %d was completed through the sink %d times, want exactly once", runID, n)
		}
	}
}

// request returns a request for target with fresh run and job ids.
func (b *bundle) request(target string) targets.Request {
	id := b.s.nextID.Add(1)
	return targets.Request{
		RunID:         id,
		JobID:         id + 500_000,
		Target:        target,
		Params:        "conformance",
		ShardIndex:    0,
		ShardTotal:    1,
		ScheduledAt:   time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		BlockStrategy: "SERIAL_EXECUTION",
	}
}

// run dispatches req and fails the check if the target does not accept it.
func (b *bundle) run(req targets.Request) targets.Dispatch {
	b.t.Helper()
	disp, err := b.driver.Run(b.ctx, req)
	if err != nil {
		b.t.Fatalf("Run(%s, run %d): %v", req.Target, req.RunID, err)
	}
	b.mu.Lock()
	b.async[req.RunID] = disp.Done == nil
	b.mu.Unlock()
	return disp
}

// outcome returns the run's outcome: Dispatch.Done, or the one the sink gets.
func (b *bundle) outcome(req targets.Request, disp targets.Dispatch) targets.Outcome {
	b.t.Helper()
	if disp.Done != nil {
		return *disp.Done
	}
	return b.sink.WaitOutcome(b.t, req.RunID, b.h.Wait)
}

func (b *bundle) wantState(req targets.Request, out targets.Outcome, state kind.RunState) {
	b.t.Helper()
	if out.State != state {
		b.t.Fatalf("run %d on %s: state %q (code %d, message %q), want %q; log:\n%s",
			req.RunID, req.Target, out.State, out.Code, out.Message, state, strings.Join(b.sink.Lines(req.RunID), "\n"))
	}
}

func (s *suite) testSuccess(t *testing.T) {
	b := s.setup(t)
	req := b.request(s.h.Succeed)
	disp := b.run(req)
	out := b.outcome(req, disp)
	b.wantState(req, out, kind.RunSucceeded)
	if disp.Done != nil && b.sink.Completions(req.RunID) != 0 {
		t.Fatalf("run %d returned Done and was also completed through the sink", req.RunID)
	}
}

func (s *suite) testFailure(t *testing.T) {
	b := s.setup(t)
	req := b.request(s.h.Fail)
	out := b.outcome(req, b.run(req))
	b.wantState(req, out, kind.RunFailed)
	if strings.TrimSpace(out.Message) == "" {
		t.Fatalf("run %d failed without a message (code %d)", req.RunID, out.Code)
	}
}

func (s *suite) testKill(t *testing.T) {
	if s.h.SkipKill {
		t.Skip("Harness.SkipKill: the driver cannot kill runs")
	}
	b := s.setup(t)
	req := b.request(s.h.Long)
	disp := b.run(req)
	if disp.Done != nil {
		t.Fatalf("Long target %s finished inside Run (%+v); it must keep running until killed", req.Target, *disp.Done)
	}
	if !s.h.SkipIdleBeat {
		if err := b.driver.IdleBeat(b.ctx, req.Target, req.JobID); !errors.Is(err, targets.ErrBusy) {
			t.Fatalf("IdleBeat while job %d runs: %v, want an error wrapping targets.ErrBusy", req.JobID, err)
		}
	}
	if err := b.driver.Kill(b.ctx, req.Target, req.RunID, req.JobID); err != nil {
		t.Fatalf("Kill of running run %d: %v", req.RunID, err)
	}
	if err := b.driver.Kill(b.ctx, req.Target, req.RunID, req.JobID); err != nil {
		t.Fatalf("Kill repeated for run %d: %v, want nil", req.RunID, err)
	}
	out := b.sink.WaitOutcome(t, req.RunID, s.h.Wait)
	b.wantState(req, out, kind.RunKilled)
	if err := b.driver.Kill(b.ctx, req.Target, req.RunID, req.JobID); err != nil {
		t.Fatalf("Kill of ended run %d: %v, want nil", req.RunID, err)
	}
	if !s.h.SkipIdleBeat {
		if err := b.driver.IdleBeat(b.ctx, req.Target, req.JobID); err != nil {
			t.Fatalf("IdleBeat after job %d's run ended: %v, want nil", req.JobID, err)
		}
	}
}

func (s *suite) testKillUnknown(t *testing.T) {
	b := s.setup(t)
	req := b.request(s.h.Long)
	if err := b.driver.Kill(b.ctx, req.Target, req.RunID, req.JobID); err != nil {
		t.Fatalf("Kill of run %d that never ran: %v, want nil", req.RunID, err)
	}
}

func (s *suite) testTimeout(t *testing.T) {
	b := s.setup(t)
	req := b.request(s.h.Long)
	req.Timeout = s.h.Timeout
	out := b.outcome(req, b.run(req))
	b.wantState(req, out, kind.RunTimedOut)
}

func (s *suite) testBeat(t *testing.T) {
	b := s.setup(t)
	if err := b.driver.Beat(b.ctx, s.h.Succeed); err != nil {
		t.Fatalf("Beat(%s): %v", s.h.Succeed, err)
	}
}

// splitLines splits a chunk's content into lines; a final newline ends the
// last line.
func splitLines(content string) []string {
	if content == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(content, "\n"), "\n")
}

func (s *suite) testLog(t *testing.T) {
	b := s.setup(t)
	req := b.request(s.h.Succeed)
	disp := b.run(req)
	b.wantState(req, b.outcome(req, disp), kind.RunSucceeded)

	first, err := b.driver.Log(b.ctx, req.Target, req.RunID, 1)
	if err != nil {
		t.Fatalf("Log(run %d, from 1): %v", req.RunID, err)
	}
	all := splitLines(first.Content)
	if len(all) < 2 {
		t.Fatalf("Log(run %d, from 1) returned %d line(s) %q; the Succeed target must log at least two", req.RunID, len(all), first.Content)
	}
	if first.FromLine != 1 || first.ToLine != len(all) {
		t.Fatalf("Log(run %d, from 1): lines %d..%d, want 1..%d", req.RunID, first.FromLine, first.ToLine, len(all))
	}
	if missing := missingInOrder(all, s.h.SucceedLog); missing != "" {
		t.Fatalf("Log(run %d) lacks line %q (want %q in order) in:\n%s", req.RunID, missing, s.h.SucceedLog, first.Content)
	}

	later, err := b.driver.Log(b.ctx, req.Target, req.RunID, 2)
	if err != nil {
		t.Fatalf("Log(run %d, from 2): %v", req.RunID, err)
	}
	if got, want := splitLines(later.Content), all[1:]; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Log(run %d, from 2) = %q, want %q", req.RunID, got, want)
	}
	if later.FromLine != 2 || later.ToLine != len(all) {
		t.Fatalf("Log(run %d, from 2): lines %d..%d, want 2..%d", req.RunID, later.FromLine, later.ToLine, len(all))
	}

	past, err := b.driver.Log(b.ctx, req.Target, req.RunID, len(all)+1)
	if err != nil {
		t.Fatalf("Log(run %d, from %d): %v", req.RunID, len(all)+1, err)
	}
	if past.Content != "" || past.ToLine != 0 {
		t.Fatalf("Log(run %d, from %d) past the last line = lines ..%d %q, want nothing", req.RunID, len(all)+1, past.ToLine, past.Content)
	}
	if disp.Done == nil && !past.End {
		t.Fatalf("Log(run %d) of an ended run: End = false, want true", req.RunID)
	}
}

// missingInOrder returns the first of want that does not occur in lines in
// order, or "" when all do.
func missingInOrder(lines, want []string) string {
	i := 0
	for _, w := range want {
		for i < len(lines) && lines[i] != w {
			i++
		}
		if i == len(lines) {
			return w
		}
		i++
	}
	return ""
}

func (s *suite) testUnknown(t *testing.T) {
	if s.h.Unknown == "" {
		t.Skip("Harness.Unknown not set")
	}
	b := s.setup(t)
	req := b.request(s.h.Unknown)
	if disp, err := b.driver.Run(b.ctx, req); !errors.Is(err, targets.ErrUnknownTarget) {
		t.Fatalf("Run(%s) = %+v, %v; want an error wrapping targets.ErrUnknownTarget", req.Target, disp, err)
	}
	if err := b.driver.Beat(b.ctx, req.Target); !errors.Is(err, targets.ErrUnknownTarget) {
		t.Fatalf("Beat(%s) = %v; want an error wrapping targets.ErrUnknownTarget", req.Target, err)
	}
	if !s.h.SkipIdleBeat {
		if err := b.driver.IdleBeat(b.ctx, req.Target, req.JobID); err == nil {
			t.Fatalf("IdleBeat(%s) = nil; want an error", req.Target)
		}
	}
	if n := b.sink.Completions(req.RunID); n != 0 {
		t.Fatalf("rejected run %d was completed through the sink %d time(s)", req.RunID, n)
	}
}

func (s *suite) testConcurrent(t *testing.T) {
	b := s.setup(t)
	type started struct {
		req   targets.Request
		disp  targets.Dispatch
		state kind.RunState
	}
	var runs []started
	for i := 0; i < 3; i++ {
		for _, tc := range []struct {
			target string
			state  kind.RunState
		}{
			{s.h.Succeed, kind.RunSucceeded},
			{s.h.Fail, kind.RunFailed},
		} {
			req := b.request(tc.target)
			runs = append(runs, started{req: req, disp: b.run(req), state: tc.state})
		}
	}
	for _, r := range runs {
		b.wantState(r.req, b.outcome(r.req, r.disp), r.state)
	}
}
