package scheduler

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// pool is a fixed set of workers with a bounded queue. Capacity is reserved
// before runs are claimed, so a claimed run always has a place in the queue:
// when the pool is full the runs stay scheduled (unclaimed) and are offered
// again at the next tick, late, never dropped.
type pool struct {
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

// release returns unused reservations.
func (p *pool) release(n int) {
	for i := 0; i < n; i++ {
		p.slots <- struct{}{}
	}
}

// submit queues a task on a reserved place; it never blocks.
func (p *pool) submit(task func(context.Context)) {
	p.tasks <- task
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
