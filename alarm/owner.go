package alarm

// The dispatcher's goroutine: it owns the queue's far end, the alarms in
// progress, the retry timer and the workers. Only it touches an alarm's
// state; workers get copies of what they read (task) and answer on a
// channel (outcome).

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"
)

// equalJitter draws uniformly from [d/2, d].
func equalJitter(d time.Duration) time.Duration {
	half := d / 2
	return half + rand.N(d-half+1)
}

// backoff is the wait before retry n (n >= 1) without jitter.
func backoff(base, maxWait time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n; i++ {
		if d >= maxWait/2 {
			return maxWait
		}
		d *= 2
	}
	return min(d, maxWait)
}

// queued is an alarm waiting in the queue.
type queued struct {
	ev       Event
	channels []string
}

// alarm is an alarm in progress; only the owner goroutine touches it.
type alarm struct {
	ev       Event
	chans    []*channel
	left     int // channels not yet finished
	result   Result
	recTries int
}

// channel is one channel of one alarm.
type channel struct {
	a      *alarm
	name   string
	sender Sender // nil: unknown channel
	tries  int
	ok     bool
}

// task is work for a worker: a Send (ch set) or a Record (rec set). It
// carries copies of what the worker reads.
type task struct {
	ch     *channel
	rec    *alarm
	sender Sender
	ev     Event
	result Result
}

type outcome struct {
	t   task
	at  time.Time
	err error
}

// retryAt is a task waiting for its backoff to pass.
type retryAt struct {
	at time.Time
	t  task
}

type retryHeap []retryAt

func (h retryHeap) Len() int           { return len(h) }
func (h retryHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h retryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *retryHeap) Push(x any)        { *h = append(*h, x.(retryAt)) }
func (h *retryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// owner is the state of the dispatcher's goroutine.
type owner struct {
	d        *Dispatcher
	live     map[*alarm]bool
	ready    []task
	retries  retryHeap
	timer    clockwork.Timer
	armed    bool
	busy     int  // tasks handed to workers and not yet answered
	draining bool // Stop was called: no new alarms, no retries
	hard     bool // cancelled: no new attempts, only records
}

// run is the dispatcher's goroutine.
func (d *Dispatcher) run(ctx context.Context) {
	// Attempts run under sendCtx, which the end of the stop grace cancels;
	// Record runs under ctx, so that outcomes are still stored then.
	sendCtx, cancelSends := context.WithCancel(ctx)
	defer cancelSends()
	var wg sync.WaitGroup
	for range d.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.work(sendCtx, ctx)
		}()
	}
	o := &owner{d: d, live: map[*alarm]bool{}}
	var grace clockwork.Timer
	var graceC <-chan time.Time
	ctxDone := ctx.Done()
	stopCh := (<-chan struct{})(d.stopCh)
	for (!o.draining && !o.hard) || len(o.live) > 0 || o.busy > 0 {
		var taskCh chan<- task
		var next task
		if len(o.ready) > 0 {
			taskCh, next = d.tasks, o.ready[0]
		}
		var queueCh <-chan queued
		if !o.draining && !o.hard && len(o.live) < d.opts.Queue {
			queueCh = d.queue
		}
		var timerC <-chan time.Time
		if o.armed {
			timerC = o.timer.Chan()
		}
		select {
		case q := <-queueCh:
			o.admit(q)
		case taskCh <- next:
			o.ready = o.ready[1:]
			o.busy++
		case r := <-d.results:
			o.busy--
			o.handle(r)
		case <-timerC:
			o.armed = false
			o.due()
		case <-stopCh:
			stopCh = nil
			grace = d.clock.NewTimer(d.opts.StopGrace)
			graceC = grace.Chan()
			o.drain()
		case <-graceC:
			graceC = nil
			d.log.WithField("stop_grace", d.opts.StopGrace.String()).Warn("alarm dispatcher: stop grace is over; cancelling attempts under way")
			cancelSends()
			o.cancel()
		case <-ctxDone:
			ctxDone = nil
			cancelSends()
			o.cancel()
		}
	}
	if grace != nil {
		grace.Stop()
	}
	if o.timer != nil {
		o.timer.Stop()
	}
	close(d.tasks)
	wg.Wait()
	d.gate.Lock()
	d.closed = true
	d.gate.Unlock()
	d.dropQueued()
}

// work runs tasks until the owner closes the task channel.
func (d *Dispatcher) work(sendCtx, recordCtx context.Context) {
	for t := range d.tasks {
		r := outcome{t: t, at: d.clock.Now()}
		if t.ch != nil {
			actx, cancel := context.WithTimeout(sendCtx, d.opts.AttemptTimeout)
			r.err = safeSend(actx, t.sender, t.ev)
			cancel()
		} else {
			actx, cancel := context.WithTimeout(recordCtx, d.opts.AttemptTimeout)
			r.err = d.opts.Record(actx, t.ev.RunID, t.result)
			cancel()
		}
		d.results <- r
	}
}

// safeSend calls Send and turns a panic into an error.
func safeSend(ctx context.Context, s Sender, ev Event) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = Permanent(fmt.Errorf("alarm channel %q panicked: %v", s.Name(), p))
		}
	}()
	return s.Send(ctx, ev)
}

// admit starts an alarm: every known channel gets its first attempt.
func (o *owner) admit(q queued) {
	a := &alarm{ev: q.ev, result: Result{Kind: q.ev.Kind}}
	o.live[a] = true
	for _, name := range q.channels {
		a.chans = append(a.chans, &channel{a: a, name: name, sender: o.d.senders[name]})
	}
	a.left = len(a.chans)
	if a.left == 0 {
		o.complete(a)
		return
	}
	now := o.d.clock.Now()
	for _, c := range a.chans {
		if c.sender == nil {
			o.d.log.WithFields(o.fields(a, c.name)).Error("alarm names an unknown channel")
			o.finish(c, now, fmt.Errorf("%w %q (known: %v)", ErrUnknownChannel, c.name, o.d.Channels()))
			continue
		}
		o.ready = append(o.ready, task{ch: c, sender: c.sender, ev: a.ev})
	}
}

// handle takes a worker's answer.
func (o *owner) handle(r outcome) {
	if r.t.rec != nil {
		o.recorded(r.t.rec, r.err)
		return
	}
	c := r.t.ch
	c.tries++
	o.d.n.attempts.Add(1)
	if r.err == nil {
		o.d.log.WithFields(o.fields(c.a, c.name)).WithField("attempt", c.tries).Debug("alarm sent")
		o.finish(c, r.at, nil)
		return
	}
	o.d.n.attemptErrors.Add(1)
	log := o.d.log.WithFields(o.fields(c.a, c.name)).WithFields(logrus.Fields{"attempt": c.tries, "error": r.err.Error()})
	switch {
	case IsPermanent(r.err):
		log.Error("alarm channel failed and retrying cannot help; giving up")
	case c.tries >= o.d.opts.MaxAttempts:
		log.Error("alarm channel failed; giving up after the last attempt")
	case o.draining || o.hard:
		log.Error("alarm channel failed while the dispatcher stops; giving up")
	default:
		wait := o.d.jitter(backoff(o.d.opts.BackoffBase, o.d.opts.BackoffMax, c.tries))
		log.WithField("retry_in", wait.String()).Warn("alarm channel failed; will retry")
		o.record(c, r.at, r.err)
		o.schedule(o.d.clock.Now().Add(wait), task{ch: c, sender: c.sender, ev: c.a.ev})
		return
	}
	o.finish(c, r.at, r.err)
}

// record appends an attempt to the alarm's history.
func (o *owner) record(c *channel, at time.Time, err error) {
	rec := AttemptRecord{Sender: c.name, At: at}
	if err != nil {
		rec.Err = err.Error()
	}
	c.a.result.Attempts = append(c.a.result.Attempts, rec)
}

// finish ends a channel with its last attempt; the alarm completes with its
// last channel.
func (o *owner) finish(c *channel, at time.Time, err error) {
	o.record(c, at, err)
	c.ok = err == nil
	c.a.left--
	if c.a.left == 0 {
		o.complete(c.a)
	}
}

// complete settles the alarm's status and records it.
func (o *owner) complete(a *alarm) {
	a.result.Status = StatusSent
	switch {
	case len(a.chans) == 0:
		a.result.Status = StatusNotNeeded
		o.d.n.notNeeded.Add(1)
	case slices.ContainsFunc(a.chans, func(c *channel) bool { return !c.ok }):
		a.result.Status = StatusFailed
		o.d.n.failed.Add(1)
	default:
		o.d.n.sent.Add(1)
	}
	o.d.log.WithFields(o.fields(a, "")).WithField("status", a.result.Status).Debug("alarm done")
	if o.d.opts.Record == nil {
		delete(o.live, a)
		return
	}
	o.ready = append(o.ready, task{rec: a, ev: a.ev, result: a.result})
}

// recorded takes the answer of Record.
func (o *owner) recorded(a *alarm, err error) {
	a.recTries++
	if err == nil {
		delete(o.live, a)
		return
	}
	o.d.n.recordErrors.Add(1)
	log := o.d.log.WithFields(o.fields(a, "")).WithFields(logrus.Fields{"status": a.result.Status, "attempt": a.recTries, "error": err.Error()})
	if a.recTries >= o.d.opts.MaxAttempts || o.draining || o.hard {
		log.Error("alarm outcome could not be recorded; giving up")
		delete(o.live, a)
		return
	}
	wait := o.d.jitter(backoff(o.d.opts.BackoffBase, o.d.opts.BackoffMax, a.recTries))
	log.WithField("retry_in", wait.String()).Warn("alarm outcome could not be recorded; will retry")
	o.schedule(o.d.clock.Now().Add(wait), task{rec: a, ev: a.ev, result: a.result})
}

// schedule queues a retry and re-arms the timer.
func (o *owner) schedule(at time.Time, t task) {
	heap.Push(&o.retries, retryAt{at: at, t: t})
	o.arm()
}

// due moves the retries whose time has come to the ready list.
func (o *owner) due() {
	now := o.d.clock.Now()
	for len(o.retries) > 0 && !o.retries[0].at.After(now) {
		o.ready = append(o.ready, heap.Pop(&o.retries).(retryAt).t)
	}
	o.arm()
}

// arm sets the timer for the earliest retry, or stops it.
func (o *owner) arm() {
	if len(o.retries) == 0 {
		if o.armed {
			o.timer.Stop()
			o.armed = false
		}
		return
	}
	wait := o.retries[0].at.Sub(o.d.clock.Now())
	if o.timer == nil {
		o.timer = o.d.clock.NewTimer(wait)
	} else {
		o.timer.Stop()
		o.timer.Reset(wait)
	}
	o.armed = true
}

// drain begins the stop: what is queued is admitted for one attempt, and
// waiting retries end with ErrStopped.
func (o *owner) drain() {
	o.draining = true
	for empty := false; !empty; {
		select {
		case q := <-o.d.queue:
			o.admit(q)
		default:
			empty = true
		}
	}
	o.stopRetries()
}

// cancel is the hard stop: attempts under way were cancelled, and channels
// not yet tried give up with ErrStopped. Outcomes are still recorded, once.
func (o *owner) cancel() {
	o.hard = true
	ready := o.ready
	o.ready = nil
	now := o.d.clock.Now()
	for _, t := range ready {
		if t.ch != nil {
			o.finish(t.ch, now, ErrStopped)
		} else {
			o.ready = append(o.ready, t)
		}
	}
	o.stopRetries()
}

// stopRetries ends the waiting retries: channels give up with ErrStopped,
// records get their last try now.
func (o *owner) stopRetries() {
	pending := o.retries
	o.retries = nil
	o.arm()
	now := o.d.clock.Now()
	for _, r := range pending {
		if r.t.ch != nil {
			o.finish(r.t.ch, now, ErrStopped)
		} else {
			o.ready = append(o.ready, r.t)
		}
	}
}

// fields are the log fields of an alarm (and channel).
func (o *owner) fields(a *alarm, channel string) logrus.Fields {
	f := logrus.Fields{"run_id": a.ev.RunID, "job_id": a.ev.JobID, "kind": a.ev.Kind}
	if channel != "" {
		f["channel"] = channel
	}
	return f
}
