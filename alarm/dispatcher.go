package alarm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/logs"
)

// Defaults of Options.
const (
	DefaultQueue          = 1000
	DefaultWorkers        = 4
	DefaultMaxAttempts    = 5
	DefaultBackoffBase    = time.Second
	DefaultBackoffMax     = 5 * time.Minute
	DefaultAttemptTimeout = time.Minute
	DefaultStopGrace      = 5 * time.Second
)

// Options configure a Dispatcher. Zero numbers take the defaults above.
type Options struct {
	// Senders are the channels, by Name (which must be unique).
	Senders []Sender
	// Clock drives retry backoff and the stop grace. Nil: the real clock.
	Clock clockwork.Clock
	// Log receives the dispatcher's logs (field service=alarm is added).
	// Nil: logs are discarded.
	Log *logrus.Entry
	// Queue is how many alarms may wait to be started; Enqueue fails when
	// it is full. As many more may be in progress (being sent, or waiting
	// for a retry).
	Queue int
	// Workers is how many attempts (and Record calls) run at once.
	Workers int
	// MaxAttempts is how many times one channel is tried for one alarm.
	MaxAttempts int
	// BackoffBase and BackoffMax shape the wait before retry n:
	// min(BackoffMax, BackoffBase*2^(n-1)), then drawn uniformly from its
	// upper half ("equal jitter"), so that alarms failing together do not
	// retry together.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// AttemptTimeout bounds one Send or Record call on top of the sender's
	// own timeout, so a misbehaving sender cannot hold a worker.
	AttemptTimeout time.Duration
	// StopGrace is how long Stop lets started work finish (see Stop).
	StopGrace time.Duration
	// Record stores the outcome of an alarm, for example as the run's alarm
	// status. It is called once per alarm from a worker, and retried like a
	// channel when it fails. Nil: outcomes are only logged.
	Record func(ctx context.Context, runID int64, result Result) error
}

// withDefaults fills the zero fields.
func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	o.Log = logs.OrDiscard(o.Log)
	o.Log = o.Log.WithField("service", "alarm")
	seti := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	setd := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	seti(&o.Queue, DefaultQueue)
	seti(&o.Workers, DefaultWorkers)
	seti(&o.MaxAttempts, DefaultMaxAttempts)
	setd(&o.BackoffBase, DefaultBackoffBase)
	setd(&o.BackoffMax, DefaultBackoffMax)
	setd(&o.AttemptTimeout, DefaultAttemptTimeout)
	setd(&o.StopGrace, DefaultStopGrace)
	return o
}

// validate reports the first invalid option (after defaults).
func (o Options) validate() error {
	var errs []error
	pos := func(name string, v int64) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%w: alarm dispatcher %s must be positive, got %d", ErrInvalidConfig, name, v))
		}
	}
	pos("queue", int64(o.Queue))
	pos("workers", int64(o.Workers))
	pos("max_attempts", int64(o.MaxAttempts))
	pos("backoff_base", int64(o.BackoffBase))
	pos("backoff_max", int64(o.BackoffMax))
	pos("attempt_timeout", int64(o.AttemptTimeout))
	pos("stop_grace", int64(o.StopGrace))
	if o.BackoffMax < o.BackoffBase {
		errs = append(errs, fmt.Errorf("%w: alarm dispatcher backoff_max (%s) must not be below backoff_base (%s)", ErrInvalidConfig, o.BackoffMax, o.BackoffBase))
	}
	seen := map[string]bool{}
	for i, s := range o.Senders {
		switch {
		case s == nil:
			errs = append(errs, fmt.Errorf("%w: alarm dispatcher senders[%d] is nil", ErrInvalidConfig, i))
		case s.Name() == "":
			errs = append(errs, fmt.Errorf("%w: alarm dispatcher senders[%d] has no name", ErrInvalidConfig, i))
		case seen[s.Name()]:
			errs = append(errs, fmt.Errorf("%w: alarm dispatcher has two channels named %q", ErrInvalidConfig, s.Name()))
		default:
			seen[s.Name()] = true
		}
	}
	return errors.Join(errs...)
}

// Stats are the dispatcher's counters since it was made.
type Stats struct {
	Enqueued      uint64 // alarms accepted by Enqueue
	Dropped       uint64 // alarms refused by Enqueue (queue full, invalid, stopped) or left in the queue by Stop
	Sent          uint64 // alarms every channel delivered
	Failed        uint64 // alarms at least one channel gave up on
	NotNeeded     uint64 // alarms with no channel
	Attempts      uint64 // Send calls
	AttemptErrors uint64 // Send calls that failed
	RecordErrors  uint64 // Record calls that failed
	Queued        int    // alarms waiting to be started now
}

// Dispatcher delivers alarms in the background so that scheduling never
// waits for a chat robot or a mail server. Enqueue never blocks: when the
// queue is full the alarm is dropped with an error log and counted. Each
// channel of an alarm is tried up to MaxAttempts times with exponential
// backoff on the injected clock; once every channel has succeeded or given
// up, the Result goes to Options.Record.
//
// Start launches one goroutine that owns the queue, the retry timer and a
// fixed set of workers; Stop ends it.
type Dispatcher struct {
	opts    Options
	clock   clockwork.Clock
	log     *logrus.Entry
	senders map[string]Sender
	jitter  func(time.Duration) time.Duration

	queue   chan queued
	tasks   chan task
	results chan outcome

	gate   sync.RWMutex // held for reading while enqueuing, for writing to close
	closed bool         // no more Enqueue

	mu      sync.Mutex
	started bool
	stopCh  chan struct{}
	stopped sync.Once
	done    chan struct{}

	n struct {
		enqueued, dropped, sent, failed, notNeeded, attempts, attemptErrors, recordErrors atomic.Uint64
	}
}

// NewDispatcher checks opts and returns a dispatcher that is not started.
func NewDispatcher(opts Options) (*Dispatcher, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	d := &Dispatcher{
		opts:    opts,
		clock:   opts.Clock,
		log:     opts.Log,
		senders: make(map[string]Sender, len(opts.Senders)),
		jitter:  equalJitter,
		queue:   make(chan queued, opts.Queue),
		tasks:   make(chan task),
		results: make(chan outcome),
		stopCh:  make(chan struct{}),
		done:    make(chan struct{}),
	}
	for _, s := range opts.Senders {
		d.senders[s.Name()] = s
	}
	return d, nil
}

// Channels lists the channel names, sorted.
func (d *Dispatcher) Channels() []string {
	names := make([]string, 0, len(d.senders))
	for n := range d.senders {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// String names the dispatcher and its channels; senders print redacted.
func (d *Dispatcher) String() string {
	return fmt.Sprintf("alarm.Dispatcher{channels:%v queue:%d workers:%d max_attempts:%d}",
		d.Channels(), d.opts.Queue, d.opts.Workers, d.opts.MaxAttempts)
}

// Format makes every fmt verb print String.
func (d *Dispatcher) Format(f fmt.State, verb rune) { formatRedacted(f, verb, d.String()) }

// Stats returns the counters.
func (d *Dispatcher) Stats() Stats {
	return Stats{
		Enqueued: d.n.enqueued.Load(), Dropped: d.n.dropped.Load(),
		Sent: d.n.sent.Load(), Failed: d.n.failed.Load(), NotNeeded: d.n.notNeeded.Load(),
		Attempts: d.n.attempts.Load(), AttemptErrors: d.n.attemptErrors.Load(),
		RecordErrors: d.n.recordErrors.Load(), Queued: len(d.queue),
	}
}

// Enqueue hands an alarm to the dispatcher without blocking. channels names
// the channels to use (duplicates ignored); none means no alarm is needed,
// which is still recorded (StatusNotNeeded). A name without a sender is
// recorded as a failed attempt (ErrUnknownChannel). Enqueue returns false,
// logs at error level and counts the alarm as dropped when the event is
// invalid, the queue is full, or the dispatcher has stopped.
func (d *Dispatcher) Enqueue(ev Event, channels []string) bool {
	if err := ev.Validate(); err != nil {
		d.drop(ev, err.Error())
		return false
	}
	if ev.Kind == kind.AlarmTest {
		d.drop(ev, "a test alarm is sent with SendTest; it belongs to no run and is not queued")
		return false
	}
	var names []string
	for _, c := range channels {
		if !slices.Contains(names, c) {
			names = append(names, c)
		}
	}
	d.gate.RLock()
	defer d.gate.RUnlock()
	if d.closed {
		d.drop(ev, "the alarm dispatcher is stopped")
		return false
	}
	select {
	case d.queue <- queued{ev: ev, channels: names}:
		d.n.enqueued.Add(1)
		return true
	default:
		d.drop(ev, fmt.Sprintf("the alarm queue is full (%d waiting)", cap(d.queue)))
		return false
	}
}

// drop logs and counts an alarm that will not be sent.
func (d *Dispatcher) drop(ev Event, reason string) {
	d.n.dropped.Add(1)
	d.log.WithFields(logrus.Fields{"run_id": ev.RunID, "job_id": ev.JobID, "kind": ev.Kind, "reason": reason}).
		Error("alarm dropped")
}

// Start launches the dispatcher's goroutine and returns at once. ctx ends
// it like a Stop without grace.
func (d *Dispatcher) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started {
		return errors.New("alarm dispatcher already started")
	}
	d.gate.RLock()
	closed := d.closed
	d.gate.RUnlock()
	if closed {
		return errors.New("alarm dispatcher already stopped")
	}
	d.started = true
	go func() {
		defer close(d.done)
		d.run(ctx)
	}()
	return nil
}

// Stop stops taking alarms and blocks until the dispatcher's goroutines have
// ended. It drains for up to StopGrace on the clock: alarms already queued
// get one attempt per channel and attempts under way may finish, but no
// retry is waited for (those channels give up with ErrStopped). After the
// grace, attempts still running are cancelled. Every outcome is still
// recorded (StatusFailed when a channel gave up), with Record bounded by
// AttemptTimeout and run under Start's ctx; outcomes Record refuses are
// logged at error level. Stop is safe to call twice, and before Start (the
// queued alarms are then dropped).
func (d *Dispatcher) Stop() {
	d.gate.Lock()
	d.closed = true
	d.gate.Unlock()
	d.mu.Lock()
	started := d.started
	d.mu.Unlock()
	d.stopped.Do(func() { close(d.stopCh) })
	if !started {
		d.dropQueued()
		return
	}
	<-d.done
}

// dropQueued drops what is left in the queue once it is closed.
func (d *Dispatcher) dropQueued() {
	for {
		select {
		case q := <-d.queue:
			d.drop(q.ev, "the alarm dispatcher stopped before the alarm was started")
		default:
			return
		}
	}
}
