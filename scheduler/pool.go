package scheduler

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
)

// pool is a fixed set of workers with a bounded queue. Capacity is reserved
// before runs are claimed, so a claimed run always has a place in the queue:
// when the pool is full the runs stay scheduled (unclaimed) and are offered
// again at the next tick, late, never dropped.
type pool struct {
	// unhanded counts the tasks queued or running that have not passed
	// their hand-off yet; past the tasks running past it (in the send).
	// Together they say when every task has done what it can do without
	// waiting (settled).
	unhanded, past atomic.Int64

	name    string
	tasks   chan func(context.Context)
	slots   chan struct{} // one token per free queue place
	workers int
	wg      sync.WaitGroup
	cancel  context.CancelFunc
	once    sync.Once
	startMu sync.Once
}

func newPool(name string, cfg PoolConfig) *pool {
	p := &pool{
		name:    name,
		tasks:   make(chan func(context.Context), cfg.Queue),
		slots:   make(chan struct{}, cfg.Queue),
		workers: cfg.Workers,
	}
	for i := 0; i < cfg.Queue; i++ {
		p.slots <- struct{}{}
	}
	return p
}

// Start launches the workers; ctx is the hard-stop context of their tasks.
func (p *pool) Start(ctx context.Context) {
	p.startMu.Do(func() {
		ctx, p.cancel = context.WithCancel(ctx)
		for i := 0; i < p.workers; i++ {
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				for task := range p.tasks {
					p.slots <- struct{}{}
					task(ctx)
				}
			}()
		}
	})
}

// reserve takes up to n queue places without blocking and returns how many.
func (p *pool) reserve(n int) int {
	got := 0
	for got < n {
		select {
		case <-p.slots:
			got++
		default:
			return got
		}
	}
	return got
}

// reserveSoon is reserve for a queue that was just found full: workers that
// were just handed tasks give their places back as soon as they run, so it
// lets runnable goroutines run a few times before it reports no room. It
// never waits for a dispatch to end.
func (p *pool) reserveSoon(n int) int {
	for i := 0; i < 4; i++ {
		runtime.Gosched()
		if k := p.reserve(n); k > 0 {
			return k
		}
	}
	return 0
}

// reserveWithin is reserve that waits up to d (wall time: it waits for
// workers, not for the schedule) for places to free while it has none.
func (p *pool) reserveWithin(n int, d time.Duration) int {
	got := p.reserve(n)
	if got > 0 || n == 0 {
		return got
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.slots:
		return 1 + p.reserve(n-1)
	case <-t.C:
		return 0
	}
}

// release returns unused reservations.
func (p *pool) release(n int) {
	for i := 0; i < n; i++ {
		p.slots <- struct{}{}
	}
}

// submit queues a task on a reserved place; it never blocks. The task
// reports its hand-off through the turn it is given.
func (p *pool) submit(task func(context.Context, *turn)) {
	p.unhanded.Add(1)
	t := &turn{p: p}
	p.tasks <- func(ctx context.Context) {
		defer t.end()
		task(ctx, t)
	}
}

// settled reports that no task can move on without something outside the
// pool (a blocked send, the clock): none waits before its hand-off, or every
// worker is busy past its own.
func (p *pool) settled() bool {
	return p.unhanded.Load() == 0 || p.past.Load() == int64(p.workers)
}

// turn is one task's passage through its hand-off.
type turn struct {
	p      *pool
	passed bool
}

// pass marks the hand-off decided (handed, refused or failed); only the
// first call counts.
func (t *turn) pass() {
	if t == nil || t.passed {
		return
	}
	t.passed = true
	t.p.unhanded.Add(-1)
	t.p.past.Add(1)
}

func (t *turn) end() {
	if t.passed {
		t.p.past.Add(-1)
	} else {
		t.p.unhanded.Add(-1)
	}
}

// Stop stops taking work, lets the workers drain the queue for up to grace,
// then cancels the tasks still running and waits for the workers.
func (p *pool) Stop(clock clockwork.Clock, grace time.Duration) {
	p.once.Do(func() {
		if p.cancel == nil { // never started
			return
		}
		close(p.tasks)
		done := make(chan struct{})
		go func() { p.wg.Wait(); close(done) }()
		timer := clock.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.Chan():
			p.cancel()
			<-done
		}
		p.cancel()
	})
}
