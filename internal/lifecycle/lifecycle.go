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
