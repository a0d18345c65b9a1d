package lambda

import (
	"context"
	"errors"
	"fmt"
	"time"

	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/targets"
)

// eventRun is an Event run waiting for its callback.
type eventRun struct {
	req      targets.Request
	t        target
	deadline time.Time // when it is recorded as timed_out if it has not reported
	why      string    // what the deadline is, for the message
}

// runEvent invokes with InvocationType Event: Lambda answers 202 once it
// has queued the event, and the function reports through the callback. The
// run is then watched until its deadline (Request.Timeout + EventGrace, or
// EventMaxAge without a timeout).
func (d *Driver) runEvent(ctx context.Context, t target, req targets.Request) (targets.Dispatch, error) {
	if d.cfg.CallbackURL == "" || d.cfg.RunToken == nil {
		return targets.Dispatch{}, fmt.Errorf("run %d on %s: %w", req.RunID, req.Target, ErrEventModeUnconfigured)
	}
	// The run is registered before the invoke, so that a second dispatch of
	// it is recognized and IdleBeat sees the job busy.
	ev := &eventRun{req: req, t: t, deadline: d.clock.Now().Add(d.cfg.EventMaxAge)}
	d.mu.Lock()
	dup, err := d.admit(req.RunID)
	if err == nil && !dup {
		d.events[req.RunID] = ev
	}
	d.mu.Unlock()
	if err != nil || dup {
		return dupDispatch(req, dup), err
	}
	payload, err := d.payload(req, true)
	if err == nil {
		var out *awslambda.InvokeOutput
		var reqID string
		if out, reqID, err = d.invoke(ctx, t, invokeInput(t, types.InvocationTypeEvent, payload)); err == nil {
			d.appendLog(req.RunID, fmt.Sprintf("[ringjob] Lambda queued an Event invocation of %s (status %d, request id %s); the function reports through the callback\n",
				t, out.StatusCode, reqID))
			d.watch(ev)
			return targets.Dispatch{Message: fmt.Sprintf("Event invocation of %s queued (request id %s)", t, reqID)}, nil
		}
	}
	d.unwatch(ev)
	return targets.Dispatch{}, err
}

// watch sets the deadline of an Event run Lambda accepted and hands it to
// the watchdog, starting that if needed. A run killed meanwhile, or any
// run after Close, is not watched (its callback still reports it).
func (d *Driver) watch(ev *eventRun) {
	now := d.clock.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.events[ev.req.RunID] != ev {
		return
	}
	if d.closed {
		delete(d.events, ev.req.RunID)
		return
	}
	if ev.req.Timeout > 0 {
		ev.deadline = now.Add(ev.req.Timeout + d.cfg.EventGrace)
		ev.why = fmt.Sprintf("the job timeout %s and a grace of %s", ev.req.Timeout, d.cfg.EventGrace)
	} else {
		ev.deadline = now.Add(d.cfg.EventMaxAge)
		ev.why = fmt.Sprintf("%s (the job has no timeout; Lambda keeps an event at most 6 hours)", d.cfg.EventMaxAge)
	}
	if !d.watching {
		d.watching = true
		d.wg.Add(1)
		go d.watchdog()
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// unwatch forgets an Event run (it has ended).
func (d *Driver) unwatch(ev *eventRun) {
	d.mu.Lock()
	if d.events[ev.req.RunID] == ev {
		delete(d.events, ev.req.RunID)
	}
	d.mu.Unlock()
}

// watchdog records Event runs whose deadline passed without an outcome as
// timed_out. It is one goroutine, started with the first Event run and
// ended by Close.
func (d *Driver) watchdog() {
	defer d.wg.Done()
	for {
		now := d.clock.Now()
		var due []*eventRun
		var next time.Time
		d.mu.Lock()
		for id, ev := range d.events {
			if !ev.deadline.After(now) {
				due = append(due, ev)
				delete(d.events, id)
			} else if next.IsZero() || ev.deadline.Before(next) {
				next = ev.deadline
			}
		}
		d.mu.Unlock()
		for _, ev := range due {
			d.expire(ev)
		}
		if len(due) > 0 {
			continue
		}
		var timeout <-chan time.Time
		var timer interface{ Stop() bool }
		if !next.IsZero() {
			t := d.clock.NewTimer(next.Sub(now))
			timeout, timer = t.Chan(), t
		}
		select {
		case <-d.done:
			if timer != nil {
				timer.Stop()
			}
			return
		case <-d.wake:
		case <-timeout:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// expire records an Event run as timed_out unless it has reported.
func (d *Driver) expire(ev *eventRun) {
	ctx, cancel := context.WithTimeout(context.Background(), sinkTimeout)
	defer cancel()
	chunk, err := d.sink.ReadLog(ctx, ev.req.RunID, lastLine)
	if err == nil && chunk.End {
		return
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		d.log.WithError(err).WithField("run_id", ev.req.RunID).Debug("read run state before timing it out")
	}
	msg := fmt.Sprintf("no callback from Lambda function %s within %s; the invocation may still be running there", ev.t, ev.why)
	d.appendLog(ev.req.RunID, "[ringjob] timed out: "+msg+"\n")
	d.complete(ev.req.RunID, targets.Outcome{State: kind.RunTimedOut, Code: 502, Message: msg})
}
