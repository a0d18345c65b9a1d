package lambdaemu

import (
	"context"
	"fmt"
	"runtime"
	"sync"
)

// function is one emulated function: its concurrency slots, its queue of
// Event invocations and its pool of processes.
type function struct {
	e      *Emulator
	cfg    Function
	arn    string
	slots  chan struct{}    // one token per running invocation, capacity MaxConcurrency
	events chan *invocation // accepted Event invocations, capacity EventQueueSize

	mu      sync.Mutex
	waiting int // synchronous invocations queued for a slot
	idle    []*process
	all     map[*process]struct{}
	seq     int
	closed  bool
}

func newFunction(e *Emulator, cfg Function) *function {
	return &function{
		e:      e,
		cfg:    cfg,
		arn:    e.FunctionARN(cfg.Name),
		slots:  make(chan struct{}, cfg.MaxConcurrency),
		events: make(chan *invocation, cfg.EventQueueSize),
		all:    map[*process]struct{}{},
	}
}

// acquire takes a concurrency slot. With queue, a caller may wait for one
// (up to QueueSize callers wait) until ctx ends; otherwise, or when the queue
// is full, it fails with errThrottled.
func (f *function) acquire(ctx context.Context, queue bool) error {
	select {
	case f.slots <- struct{}{}:
		return nil
	default:
	}
	f.mu.Lock()
	if !queue || f.waiting >= f.cfg.QueueSize {
		f.mu.Unlock()
		return fmt.Errorf("%s: %w", f.cfg.Name, errThrottled)
	}
	f.waiting++
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.waiting--
		f.mu.Unlock()
	}()
	select {
	case f.slots <- struct{}{}:
		return nil
	case <-f.e.ctx.Done():
		return errStopping
	case <-ctx.Done():
		return fmt.Errorf("gave up waiting for a free %s process: %w", f.cfg.Name, ctx.Err())
	}
}

func (f *function) release() { <-f.slots }

// enqueue accepts an Event invocation, or fails with errThrottled when the
// event queue is full.
func (f *function) enqueue(inv *invocation) error {
	if f.e.isClosed() {
		return errStopping
	}
	select {
	case f.events <- inv:
		return nil
	default:
		return fmt.Errorf("%s: event queue full (%d): %w", f.cfg.Name, f.cfg.EventQueueSize, errThrottled)
	}
}

// startPump starts the goroutine that runs queued Event invocations as
// slots free up, each in a goroutine of its own (at most MaxConcurrency).
func (f *function) startPump() {
	e := f.e
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			var inv *invocation
			select {
			case <-e.ctx.Done():
				return
			case inv = <-f.events:
			}
			select {
			case <-e.ctx.Done():
				return
			case f.slots <- struct{}{}:
			}
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				defer f.release()
				f.invoke(inv)
			}()
		}
	}()
}

// take returns a warm idle process, or starts a new one (cold). The caller
// holds a slot, so at most MaxConcurrency processes are busy.
func (f *function) take() (p *process, cold bool, err error) {
	f.mu.Lock()
	for len(f.idle) > 0 {
		p = f.idle[len(f.idle)-1]
		f.idle = f.idle[:len(f.idle)-1]
		select {
		case <-p.exited: // died while idle
			delete(f.all, p)
			f.mu.Unlock()
			p.teardown()
			f.mu.Lock()
			continue
		default:
		}
		f.mu.Unlock()
		return p, false, nil
	}
	if f.closed {
		f.mu.Unlock()
		return nil, false, errStopping
	}
	f.seq++
	seq := f.seq
	f.mu.Unlock()
	p, err = startProcess(f, seq)
	if err != nil {
		return nil, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		f.mu.Unlock()
		p.teardown()
		f.mu.Lock()
		return nil, false, errStopping
	}
	f.all[p] = struct{}{}
	return p, true, nil
}

// put returns a healthy process to the idle pool after an invocation.
func (f *function) put(p *process) {
	f.mu.Lock()
	if !f.closed {
		f.idle = append(f.idle, p)
		f.mu.Unlock()
		return
	}
	delete(f.all, p)
	f.mu.Unlock()
	p.teardown()
}

// discard kills a process that failed, timed out or crashed, and removes it.
func (f *function) discard(p *process) {
	f.mu.Lock()
	delete(f.all, p)
	f.mu.Unlock()
	p.teardown()
}

// close kills every process; busy ones are torn down by their invocations.
func (f *function) close() {
	f.mu.Lock()
	f.closed = true
	idle := f.idle
	f.idle = nil
	for _, p := range idle {
		delete(f.all, p)
	}
	for p := range f.all {
		p.kill()
	}
	f.mu.Unlock()
	for _, p := range idle {
		p.teardown()
	}
}

// teardownAll tears down whatever is left (after every invocation ended).
func (f *function) teardownAll() {
	f.mu.Lock()
	left := make([]*process, 0, len(f.all))
	for p := range f.all {
		left = append(left, p)
	}
	f.all = map[*process]struct{}{}
	f.mu.Unlock()
	for _, p := range left {
		p.teardown()
	}
}

func hostArch() string {
	if runtime.GOARCH == "arm64" {
		return "arm64"
	}
	return "x86_64"
}
