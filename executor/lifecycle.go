package executor

import (
	"context"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// loop is the lifecycle every background service shares: start launches one
// goroutine the service owns; stop cancels it and blocks until it has ended.
// stop is safe to call twice and before start.
type loop struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

func (l *loop) start(ctx context.Context, run func(ctx context.Context)) {
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

func (l *loop) stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if done == nil {
		return
	}
	cancel()
	<-done
}

// sleep waits for d on the clock or until ctx ends; it reports false when ctx
// ended. The timer is stopped either way, so a fake clock keeps no stale waiter.
func sleep(ctx context.Context, clock clockwork.Clock, d time.Duration) bool {
	t := clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.Chan():
		return true
	}
}
