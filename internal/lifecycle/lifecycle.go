// Package lifecycle is the one shape every background service of Ringjob
// has: Start launches one goroutine the service owns; Stop cancels it and
// blocks until it has ended; Sleep waits on an injected clock.
package lifecycle

import (
	"context"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Loop is the lifecycle every background service shares: Start launches one
// goroutine the service owns; Stop cancels it and blocks until it has ended.
// Stop is safe to call twice and before Start. Embed it.
type Loop struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs run on a new goroutine, once.
func (l *Loop) Start(ctx context.Context, run func(ctx context.Context)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done != nil {
		return
	}
	ctx, l.cancel = context.WithCancel(ctx)
	l.done = make(chan struct{})
	done := l.done
	go func() {
		defer close(done)
		run(ctx)
	}()
}

// Stop cancels the goroutine and waits for it.
func (l *Loop) Stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if done == nil {
		return
	}
	cancel()
	<-done
}

// Every is the one shape of a periodic service's loop: it runs tick every
// interval until ctx ends, the first time after first (0: at once). A
// tick's error goes to failed unless ctx ended; the next tick tries again.
// Between ticks its goroutine sleeps on the clock (Sleep), and only there.
func Every(ctx context.Context, clock clockwork.Clock, first, interval time.Duration, tick func(context.Context) error, failed func(error)) {
	if first > 0 && !Sleep(ctx, clock, first) {
		return
	}
	for {
		if err := tick(ctx); err != nil && ctx.Err() == nil {
			failed(err)
		}
		if !Sleep(ctx, clock, interval) {
			return
		}
	}
}

// Sleep waits for d on the clock or until ctx ends; it reports false when ctx
// ended. The timer is stopped either way, so a fake clock keeps no stale waiter.
func Sleep(ctx context.Context, clock clockwork.Clock, d time.Duration) bool {
	t := clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.Chan():
		return true
	}
}

// Started reports whether Start has run.
func (l *Loop) Started() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done != nil
}

// Service is the one shape of a part that runs in the background: Start
// launches what it runs and returns; Stop ends it and returns once it has
// ended. Parts whose start can fail, or whose stop needs more than that,
// are adapted with Stage.
type Service interface {
	Start(ctx context.Context)
	Stop()
}

// Stage adapts a part to Service with functions; a nil one does nothing.
type Stage struct {
	OnStart func(ctx context.Context)
	OnStop  func()
}

// Start calls OnStart.
func (s Stage) Start(ctx context.Context) {
	if s.OnStart != nil {
		s.OnStart(ctx)
	}
}

// Stop calls OnStop.
func (s Stage) Stop() {
	if s.OnStop != nil {
		s.OnStop()
	}
}

// Services starts a list of services in order and stops them in reverse,
// so that each part stops while what it depends on still runs. Stop stops
// only what was started, once; it is safe to call twice and before Start,
// and a Start after Stop starts nothing.
type Services struct {
	mu      sync.Mutex
	list    []Service
	started int
	stopped bool
}

// NewServices lists the services in start order.
func NewServices(list ...Service) *Services { return &Services{list: list} }

// Add appends a service that its owner has started already (its start
// could fail, or needed what came before it): it stops in reverse with the
// rest.
func (s *Services) Add(svc Service) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = append(s.list[:s.started], svc)
	s.started++
}

// Start starts every service in order.
func (s *Services) Start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.stopped && s.started < len(s.list) {
		s.list[s.started].Start(ctx)
		s.started++
	}
}

// Stop stops the started services, the last started first.
func (s *Services) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.started > 0 {
		s.started--
		s.list[s.started].Stop()
	}
	s.stopped = true
}
