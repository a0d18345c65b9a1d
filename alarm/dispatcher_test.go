package alarm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ringjob/ringjob/internal/kind"
)

// fakeSender is a Sender whose answers follow a script.
type fakeSender struct {
	name  string
	clock clockwork.Clock
	// fail returns the error of call n (1-based); nil: success.
	fail func(n int) error
	// hang makes calls wait for ctx to end (or for release).
	hang    bool
	release chan struct{}

	mu     sync.Mutex
	calls  []time.Time
	events []Event
	signal chan struct{}
}

func newFakeSender(name string, clock clockwork.Clock, fail func(n int) error) *fakeSender {
	return &fakeSender{name: name, clock: clock, fail: fail, release: make(chan struct{}), signal: make(chan struct{}, 1000)}
}

func (f *fakeSender) Name() string { return f.name }

func (f *fakeSender) Send(ctx context.Context, ev Event) error {
	f.mu.Lock()
	f.calls = append(f.calls, f.clock.Now())
	f.events = append(f.events, ev)
	n := len(f.calls)
	f.mu.Unlock()
	f.signal <- struct{}{}
	if f.hang {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-f.release:
		}
	}
	if f.fail != nil {
		return f.fail(n)
	}
	return nil
}

// waitCalls waits until the sender has been called n times.
func (f *fakeSender) waitCalls(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		f.mu.Lock()
		got := len(f.calls)
		f.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-f.signal:
		case <-deadline:
			t.Fatalf("sender %s: %d calls, want %d", f.name, got, n)
		}
	}
}

func (f *fakeSender) callTimes() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.calls...)
}

// failTimes fails the first n calls.
func failTimes(n int) func(int) error {
	return func(call int) error {
		if call <= n {
			return fmt.Errorf("HTTP 503 (call %d)", call)
		}
		return nil
	}
}

// recorded is one Record call.
type recorded struct {
	runID  int64
	result Result
}

// dispatcherBundle is what a dispatcher test needs.
type dispatcherBundle struct {
	d       *Dispatcher
	clock   *clockwork.FakeClock
	hook    *logtest.Hook
	records chan recorded
	// recordErr, when set, answers Record.
	mu        sync.Mutex
	recordErr func(n int) error
	recCalls  int
}

// setupDispatcher builds a dispatcher over senders with a fake clock,
// captured logs and a Record that reports on a channel. Backoff is without
// jitter so that the waits are exact. The dispatcher is not started.
func setupDispatcher(t *testing.T, opts Options) *dispatcherBundle {
	t.Helper()
	logger, hook := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	b := &dispatcherBundle{hook: hook, records: make(chan recorded, 100)}
	if opts.Clock == nil {
		opts.Clock = clockwork.NewFakeClockAt(testStart)
	}
	b.clock = opts.Clock.(*clockwork.FakeClock)
	opts.Log = logrus.NewEntry(logger)
	opts.Record = func(ctx context.Context, runID int64, res Result) error {
		b.mu.Lock()
		b.recCalls++
		n, fail := b.recCalls, b.recordErr
		b.mu.Unlock()
		if fail != nil {
			if err := fail(n); err != nil {
				return err
			}
		}
		b.records <- recorded{runID, res}
		return nil
	}
	d, err := NewDispatcher(opts)
	require.NoError(t, err)
	d.jitter = func(d time.Duration) time.Duration { return d }
	b.d = d
	t.Cleanup(d.Stop)
	return b
}

func (b *dispatcherBundle) start(t *testing.T) {
	t.Helper()
	require.NoError(t, b.d.Start(context.Background()))
}

// next waits for the next recorded result.
func (b *dispatcherBundle) next(t *testing.T) recorded {
	t.Helper()
	select {
	case r := <-b.records:
		return r
	case <-time.After(waitLimit):
		t.Fatal("no result was recorded")
		return recorded{}
	}
}

// waitTimer waits until the dispatcher waits on n timers of the fake clock.
func (b *dispatcherBundle) waitTimer(t *testing.T, n int) {
	t.Helper()
	require.NoError(t, b.clock.BlockUntilContext(ctxT(t), n))
}

// logged returns the entries with msg.
func (b *dispatcherBundle) logged(msg string) []*logrus.Entry {
	var out []*logrus.Entry
	for _, e := range b.hook.AllEntries() {
		if e.Message == msg {
			out = append(out, e)
		}
	}
	return out
}

// errs lists the Err of each attempt.
func errs(r Result) []string {
	var out []string
	for _, a := range r.Attempts {
		out = append(out, a.Err)
	}
	return out
}

func TestDispatcherRetries(t *testing.T) {
	t.Parallel()

	t.Run("a failing channel is retried with exponential backoff until it succeeds", func(t *testing.T) {
		t.Parallel()
		clock := clockwork.NewFakeClockAt(testStart)
		flaky := newFakeSender("oncall-slack", clock, failTimes(3))
		b := setupDispatcher(t, Options{Senders: []Sender{flaky}, Clock: clock, MaxAttempts: 5})
		b.start(t)

		require.True(t, b.d.Enqueue(failureEvent(), []string{"oncall-slack"}))
		waits := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
		for i, wait := range waits {
			flaky.waitCalls(t, i+1)
			b.waitTimer(t, 1) // the retry timer, armed after the failure
			b.clock.Advance(wait)
		}
		flaky.waitCalls(t, 4)

		got := b.next(t)
		require.Equal(t, int64(9001), got.runID)
		require.Equal(t, StatusSent, got.result.Status)
		require.Equal(t, kind.AlarmFailure, got.result.Kind)
		require.Equal(t, []string{"HTTP 503 (call 1)", "HTTP 503 (call 2)", "HTTP 503 (call 3)", ""}, errs(got.result))
		wantAt := []time.Time{testStart, testStart.Add(time.Second), testStart.Add(3 * time.Second), testStart.Add(7 * time.Second)}
		require.Equal(t, wantAt, flaky.callTimes(), "attempts at the injected clock's times")
		for i, a := range got.result.Attempts {
			require.Equal(t, "oncall-slack", a.Sender)
			require.Equal(t, wantAt[i], a.At)
		}
		// The waits the dispatcher chose, as logged.
		var retryIn []any
		for _, e := range b.logged("alarm channel failed; will retry") {
			retryIn = append(retryIn, e.Data["retry_in"])
			require.Equal(t, logrus.WarnLevel, e.Level)
			require.Equal(t, "oncall-slack", e.Data["channel"])
			require.Equal(t, int64(9001), e.Data["run_id"])
		}
		require.Equal(t, []any{"1s", "2s", "4s"}, retryIn)
		require.Equal(t, "sent: oncall-slack ok (4 attempts)", got.result.Summary())

		st := b.d.Stats()
		require.Equal(t, uint64(1), st.Enqueued)
		require.Equal(t, uint64(1), st.Sent)
		require.Equal(t, uint64(4), st.Attempts)
		require.Equal(t, uint64(3), st.AttemptErrors)
	})

	t.Run("it gives up after MaxAttempts and records every attempt", func(t *testing.T) {
		t.Parallel()
		clock := clockwork.NewFakeClockAt(testStart)
		down := newFakeSender("oncall-mail", clock, failTimes(100))
		b := setupDispatcher(t, Options{Senders: []Sender{down}, Clock: clock, MaxAttempts: 4, BackoffBase: 10 * time.Second, BackoffMax: 15 * time.Second})
		b.start(t)

		require.True(t, b.d.Enqueue(failureEvent(), []string{"oncall-mail"}))
		for i, wait := range []time.Duration{10 * time.Second, 15 * time.Second, 15 * time.Second} { // capped
			down.waitCalls(t, i+1)
			b.waitTimer(t, 1)
			b.clock.Advance(wait)
		}
		got := b.next(t)
		require.Equal(t, StatusFailed, got.result.Status)
		require.Len(t, got.result.Attempts, 4)
		require.Equal(t, "HTTP 503 (call 4)", got.result.Attempts[3].Err)
		require.Len(t, down.callTimes(), 4, "no fifth attempt")
		require.Equal(t, "failed: oncall-mail gave up after 4 attempts: HTTP 503 (call 4)", got.result.Summary())

		gaveUp := b.logged("alarm channel failed; giving up after the last attempt")
		require.Len(t, gaveUp, 1)
		require.Equal(t, logrus.ErrorLevel, gaveUp[0].Level)
		require.Equal(t, uint64(1), b.d.Stats().Failed)
	})

	t.Run("a permanent error is not retried", func(t *testing.T) {
		t.Parallel()
		clock := clockwork.NewFakeClockAt(testStart)
		bad := newFakeSender("gone", clock, func(int) error { return Permanent(errors.New("HTTP 404: channel_not_found")) })
		b := setupDispatcher(t, Options{Senders: []Sender{bad}, Clock: clock})
		b.start(t)
		require.True(t, b.d.Enqueue(failureEvent(), []string{"gone"}))
		got := b.next(t) // without advancing the clock: no backoff
		require.Equal(t, StatusFailed, got.result.Status)
		require.Equal(t, []string{"HTTP 404: channel_not_found"}, errs(got.result))
	})

	t.Run("channels of one alarm are independent", func(t *testing.T) {
		t.Parallel()
		clock := clockwork.NewFakeClockAt(testStart)
		ok := newFakeSender("ok", clock, nil)
		flaky := newFakeSender("flaky", clock, failTimes(1))
		b := setupDispatcher(t, Options{Senders: []Sender{ok, flaky}, Clock: clock})
		b.start(t)
		require.True(t, b.d.Enqueue(failureEvent(), []string{"ok", "flaky", "ok"}))
		flaky.waitCalls(t, 1)
		b.waitTimer(t, 1)
		b.clock.Advance(time.Second)
		got := b.next(t)
		require.Equal(t, StatusSent, got.result.Status)
		require.Len(t, ok.callTimes(), 1, "a channel named twice is sent once, and not again when another retries")
		require.Len(t, got.result.Attempts, 3)
	})

	t.Run("a failing Record is retried", func(t *testing.T) {
		t.Parallel()
		clock := clockwork.NewFakeClockAt(testStart)
		ok := newFakeSender("ok", clock, nil)
		b := setupDispatcher(t, Options{Senders: []Sender{ok}, Clock: clock})
		b.recordErr = func(n int) error {
			if n == 1 {
				return errors.New("database is locked")
			}
			return nil
		}
		b.start(t)
		require.True(t, b.d.Enqueue(failureEvent(), []string{"ok"}))
		b.waitTimer(t, 1)
		b.clock.Advance(time.Second)
		got := b.next(t)
		require.Equal(t, StatusSent, got.result.Status)
		require.Equal(t, uint64(1), b.d.Stats().RecordErrors)
		require.Len(t, b.logged("alarm outcome could not be recorded; will retry"), 1)
	})
}

func TestDispatcherOutcomes(t *testing.T) {
	t.Parallel()

	t.Run("recovery events are sent and recorded as such", func(t *testing.T) {
		t.Parallel()
		clock := clockwork.NewFakeClockAt(testStart)
		ok := newFakeSender("oncall", clock, nil)
		b := setupDispatcher(t, Options{Senders: []Sender{ok}, Clock: clock})
		b.start(t)
		require.True(t, b.d.Enqueue(recoveryEvent(), []string{"oncall"}))
		got := b.next(t)
		require.Equal(t, int64(9101), got.runID)
		require.Equal(t, Result{Kind: kind.AlarmRecovery, Status: StatusSent, Attempts: []AttemptRecord{{Sender: "oncall", At: testStart}}}, got.result)
		ok.mu.Lock()
		require.Equal(t, kind.AlarmRecovery, ok.events[0].Kind)
		ok.mu.Unlock()
	})

	t.Run("no channel: not needed", func(t *testing.T) {
		t.Parallel()
		b := setupDispatcher(t, Options{})
		b.start(t)
		require.True(t, b.d.Enqueue(failureEvent(), nil))
		got := b.next(t)
		require.Equal(t, Result{Kind: kind.AlarmFailure, Status: StatusNotNeeded}, got.result)
		require.Equal(t, uint64(1), b.d.Stats().NotNeeded)
		require.Equal(t, "not needed: the job names no alarm channel", got.result.Summary())
	})

	t.Run("an unknown channel fails visibly, the others still send", func(t *testing.T) {
		t.Parallel()
		clock := clockwork.NewFakeClockAt(testStart)
		ok := newFakeSender("oncall", clock, nil)
		b := setupDispatcher(t, Options{Senders: []Sender{ok}, Clock: clock})
		b.start(t)
		require.True(t, b.d.Enqueue(failureEvent(), []string{"typo", "oncall"}))
		got := b.next(t)
		require.Equal(t, StatusFailed, got.result.Status)
		require.Equal(t, []string{`unknown alarm channel "typo" (known: [oncall])`, ""}, errs(got.result))
		require.Len(t, b.logged("alarm names an unknown channel"), 1)
	})

	t.Run("a panicking sender fails its channel, not the dispatcher", func(t *testing.T) {
		t.Parallel()
		clock := clockwork.NewFakeClockAt(testStart)
		boom := newFakeSender("boom", clock, func(int) error { panic("nil map") })
		b := setupDispatcher(t, Options{Senders: []Sender{boom}, Clock: clock})
		b.start(t)
		require.True(t, b.d.Enqueue(failureEvent(), []string{"boom"}))
		got := b.next(t)
		require.Equal(t, []string{`alarm channel "boom" panicked: nil map`}, errs(got.result))
	})
}

func TestDispatcherQueue(t *testing.T) {
	t.Parallel()

	t.Run("a full queue refuses at once, logs an error and counts", func(t *testing.T) {
		t.Parallel()
		b := setupDispatcher(t, Options{Queue: 2}) // not started: nothing drains the queue
		require.True(t, b.d.Enqueue(failureEvent(), nil))
		require.True(t, b.d.Enqueue(failureEvent(), nil))
		done := make(chan bool)
		go func() { done <- b.d.Enqueue(failureEvent(), nil) }()
		select {
		case ok := <-done:
			require.False(t, ok)
		case <-time.After(waitLimit):
			t.Fatal("Enqueue blocked")
		}
		st := b.d.Stats()
		require.Equal(t, uint64(2), st.Enqueued)
		require.Equal(t, uint64(1), st.Dropped)
		require.Equal(t, 2, st.Queued)
		dropped := b.logged("alarm dropped")
		require.Len(t, dropped, 1)
		require.Equal(t, logrus.ErrorLevel, dropped[0].Level)
		require.Equal(t, "the alarm queue is full (2 waiting)", dropped[0].Data["reason"])
		require.Equal(t, int64(9001), dropped[0].Data["run_id"])

		b.d.Stop() // never started: what waits is dropped, visibly
		require.Equal(t, uint64(3), b.d.Stats().Dropped)
		require.False(t, b.d.Enqueue(failureEvent(), nil), "stopped")
		require.Error(t, b.d.Start(context.Background()))
	})

	t.Run("a running dispatcher holds Queue alarms in progress and Queue waiting", func(t *testing.T) {
		t.Parallel()
		clock := clockwork.NewFakeClockAt(testStart)
		slow := newFakeSender("slow", clock, nil)
		slow.hang = true
		b := setupDispatcher(t, Options{Senders: []Sender{slow}, Clock: clock, Queue: 1, Workers: 1})
		b.start(t)
		require.True(t, b.d.Enqueue(failureEvent(), []string{"slow"}))
		slow.waitCalls(t, 1) // in progress
		require.True(t, b.d.Enqueue(recoveryEvent(), []string{"slow"}))
		require.False(t, b.d.Enqueue(failureEvent(), []string{"slow"}), "full")
		close(slow.release)
		require.Equal(t, int64(9001), b.next(t).runID)
		require.Equal(t, int64(9101), b.next(t).runID)
	})

	t.Run("invalid events are refused", func(t *testing.T) {
		t.Parallel()
		b := setupDispatcher(t, Options{})
		require.False(t, b.d.Enqueue(Event{Kind: "exploded", JobID: 1}, nil))
		require.Contains(t, b.logged("alarm dropped")[0].Data["reason"], `kind must be "failure", "recovery" or "test"`)
		require.False(t, b.d.Enqueue(TestEvent("pager", "user:alice", time.Now()), []string{"pager"}))
		require.Contains(t, b.logged("alarm dropped")[1].Data["reason"], "SendTest")
	})

	t.Run("options are checked", func(t *testing.T) {
		t.Parallel()
		a, c := newFakeSender("a", nil, nil), newFakeSender("a", nil, nil)
		_, err := NewDispatcher(Options{Senders: []Sender{a, c}})
		require.ErrorContains(t, err, `two channels named "a"`)
		_, err = NewDispatcher(Options{MaxAttempts: -1})
		require.ErrorContains(t, err, "max_attempts must be positive")
		_, err = NewDispatcher(Options{BackoffBase: time.Minute, BackoffMax: time.Second})
		require.ErrorContains(t, err, "backoff_max (1s) must not be below backoff_base (1m0s)")
	})
}

// TestDispatcherStop is not parallel: it checks that no goroutine is left.
func TestDispatcherStop(t *testing.T) {
	t.Run("Stop is prompt with a retry pending and records the alarm as failed", func(t *testing.T) {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		clock := clockwork.NewFakeClockAt(testStart)
		down := newFakeSender("down", clock, failTimes(100))
		b := setupDispatcher(t, Options{Senders: []Sender{down}, Clock: clock, BackoffBase: 5 * time.Minute})
		b.start(t)
		require.True(t, b.d.Enqueue(failureEvent(), []string{"down"}))
		down.waitCalls(t, 1)
		b.waitTimer(t, 1) // a 5 minute backoff

		stopped := make(chan struct{})
		go func() { b.d.Stop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(waitLimit):
			t.Fatal("Stop waited for the backoff")
		}
		got := b.next(t)
		require.Equal(t, StatusFailed, got.result.Status)
		require.Equal(t, []string{"HTTP 503 (call 1)", ErrStopped.Error()}, errs(got.result))
		require.Equal(t, "failed: down gave up after 1 attempt: "+ErrStopped.Error(), got.result.Summary())
		require.False(t, b.d.Enqueue(failureEvent(), []string{"down"}), "no alarms after Stop")
		b.d.Stop() // twice is fine
	})

	t.Run("Stop gives queued alarms one attempt", func(t *testing.T) {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		clock := clockwork.NewFakeClockAt(testStart)
		ok := newFakeSender("ok", clock, nil)
		b := setupDispatcher(t, Options{Senders: []Sender{ok}, Clock: clock})
		for range 3 {
			require.True(t, b.d.Enqueue(failureEvent(), []string{"ok"}))
		}
		b.start(t)
		b.d.Stop()
		for range 3 {
			require.Equal(t, StatusSent, b.next(t).result.Status)
		}
	})

	t.Run("after the grace Stop cancels a hanging attempt and still records", func(t *testing.T) {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		clock := clockwork.NewFakeClockAt(testStart)
		stuck := newFakeSender("stuck", clock, nil)
		stuck.hang = true
		b := setupDispatcher(t, Options{Senders: []Sender{stuck}, Clock: clock, StopGrace: 3 * time.Second})
		b.start(t)
		require.True(t, b.d.Enqueue(failureEvent(), []string{"stuck"}))
		stuck.waitCalls(t, 1)

		stopped := make(chan struct{})
		go func() { b.d.Stop(); close(stopped) }()
		b.waitTimer(t, 1) // the stop grace
		select {
		case <-stopped:
			t.Fatal("Stop did not wait for the attempt under way")
		default:
		}
		b.clock.Advance(3 * time.Second)
		select {
		case <-stopped:
		case <-time.After(waitLimit):
			t.Fatal("Stop did not end after the grace")
		}
		got := b.next(t)
		require.Equal(t, StatusFailed, got.result.Status)
		require.Equal(t, []string{context.Canceled.Error()}, errs(got.result))
	})

	t.Run("cancelling Start's ctx ends the dispatcher", func(t *testing.T) {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		b := setupDispatcher(t, Options{})
		ctx, cancel := context.WithCancel(context.Background())
		require.NoError(t, b.d.Start(ctx))
		require.Error(t, b.d.Start(ctx), "already started")
		cancel()
		b.d.Stop()
		require.False(t, b.d.Enqueue(failureEvent(), nil))
	})
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	var got []time.Duration
	for n := 1; n <= 11; n++ {
		got = append(got, backoff(time.Second, 5*time.Minute, n))
	}
	s := time.Second
	require.Equal(t, []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 32 * s, 64 * s, 128 * s, 256 * s, 300 * s, 300 * s}, got)
	require.Equal(t, 5*time.Minute, backoff(time.Second, 5*time.Minute, 1000), "no overflow")

	for range 1000 {
		j := equalJitter(8 * time.Second)
		require.GreaterOrEqual(t, j, 4*time.Second)
		require.LessOrEqual(t, j, 8*time.Second)
	}
}
