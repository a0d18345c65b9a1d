package scheduler

import (
	"context"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// pool is a bounded queue of runs and the goroutines that send them. Queue
// places are reserved before runs are queued, so when the pool is full the
// runs stay in the backlog and are offered again at the next tick, late,
// never dropped. A queued run is still scheduled: its goroutine claims it
// and records its hand-off (handoffGate) right before the send.
//
// Workers bounds the sends at once (concurrent driver calls: HTTP
// requests, local processes, Lambda invokes). The hand-off is a durable
// statement shared by many runs, and a run holds no send slot while it
// waits for it: up to handAhead x the free send slots may be in hand-offs
// at once, so a pool whose sends are quick hands off large batches (a
// pool of W workers is not capped at W / statement time), while a pool
// whose sends are slow hands off about as many runs as it can send. A
// handed run waiting for a send slot is the rare case (the slots it was
// admitted for were taken meanwhile): the window in which a crash leaves
// a run handed but unsent stays about the send itself.
type pool struct {
	name    string
	tasks   chan func(context.Context)
	slots   chan struct{} // one token per free queue place
	sends   chan struct{} // one token per free send slot
	workers int           // send slots
	procs   int           // goroutines: workers x (1 + handAhead)
	wg      sync.WaitGroup
	cancel  context.CancelFunc
	once    sync.Once
	startMu sync.Once

	mu       sync.Mutex
	waiters  []chan struct{} // blocked in admit, first come first woken
	running  int             // goroutines in a task
	unhanded int             // tasks queued or running before their hand-off decision
	pending  int             // admitted to a hand-off, not decided yet
	busy     int             // handed, not finished (waiting for a send slot or sending)
	waiting  int             // blocked in admit
	// gateAvg and sendAvg are moving averages of how long a hand-off and a
	// send take (wall time: this is I/O pacing, not scheduling); 0 until
	// one is seen.
	gateAvg, sendAvg time.Duration
}

// handAhead is the most runs per free send slot that may wait in
// hand-offs: as many as one send slot sends during a hand-off statement
// (its average time over the average send's), from 1 (sends as slow as a
// hand-off, or none finished yet) to handAhead. With quick sends (the
// in-process no-op driver) the cap decides the hand-off batches: 4 lets at
// most 800 runs of a 200-slot pool into hand-offs (statements of about
// 150-270 runs). 10 was tried: no lag gain measurable on a
// quiet machine at 1,000-10,000 jobs, and a pool then holds twice as many
// runs before its backlog.
const handAhead = 4

// ahead is the current number of runs per free send slot (p.mu held).
func (p *pool) ahead() int {
	if p.sendAvg <= 0 || p.gateAvg <= 0 {
		return 1
	}
	return max(1, min(handAhead, int(p.gateAvg/p.sendAvg)))
}

// average folds d into a moving average (1/16 weight).
func average(avg, d time.Duration) time.Duration {
	if avg == 0 {
		return d
	}
	return avg + (d-avg)/16
}

func newPool(name string, cfg PoolConfig) *pool {
	p := &pool{
		name:    name,
		tasks:   make(chan func(context.Context), cfg.Queue),
		slots:   make(chan struct{}, cfg.Queue),
		sends:   make(chan struct{}, cfg.Workers),
		workers: cfg.Workers,
		procs:   cfg.Workers * (1 + handAhead),
	}
	for i := 0; i < cfg.Queue; i++ {
		p.slots <- struct{}{}
	}
	for i := 0; i < cfg.Workers; i++ {
		p.sends <- struct{}{}
	}
	return p
}

// Start launches the goroutines; ctx is the hard-stop context of their tasks.
func (p *pool) Start(ctx context.Context) {
	p.startMu.Do(func() {
		ctx, p.cancel = context.WithCancel(ctx)
		for i := 0; i < p.procs; i++ {
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				for task := range p.tasks {
					p.mu.Lock()
					p.running++
					p.mu.Unlock()
					p.slots <- struct{}{}
					task(ctx)
					p.mu.Lock()
					p.running--
					p.mu.Unlock()
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

// submit queues a task on a reserved place; it never blocks. The task
// goes through its hand-off and send by the turn it is given.
func (p *pool) submit(task func(context.Context, *turn)) {
	p.mu.Lock()
	p.unhanded++
	p.mu.Unlock()
	t := &turn{p: p}
	p.tasks <- func(ctx context.Context) {
		defer t.end()
		task(ctx, t)
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

// notify wakes the goroutines blocked in admit (they count themselves
// again if they must go on waiting). p.mu is held.
func (p *pool) notify() {
	room := p.ahead()*(p.workers-p.busy) - p.pending
	for room > 0 && len(p.waiters) > 0 {
		close(p.waiters[0])
		p.waiters = p.waiters[1:]
		p.waiting--
		room--
	}
}

// settled reports that no task can move on without something outside the
// pool (a send that blocks, the clock): every task not past its hand-off
// waits for a send to end, or for a goroutine while all are busy.
func (p *pool) settled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	queued := len(p.tasks)
	return p.unhanded == p.waiting+queued && (queued == 0 || p.running == p.procs)
}

// handing says tasks are queued or running before their hand-off: runs
// of this pool are due and not yet handed to their targets.
func (p *pool) handing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.unhanded > 0
}

// turn is one task's way through its hand-off and send.
type turn struct {
	p                               *pool
	admitted, decided, handed, slot bool
	sendAt                          time.Time // the first driver call began (scheduler clock)
	sendWall, admittedAt            time.Time // wall time, for the pool's averages
	finished                        bool
}

// sending notes that the first driver call begins (now: scheduler clock).
func (t *turn) sending(now time.Time) {
	if t != nil && t.sendAt.IsZero() {
		t.sendAt, t.sendWall = now, time.Now()
	}
}

// admit waits until the run may go to a hand-off: fewer runs are in
// hand-offs than handAhead x the send slots not taken by handed runs.
func (t *turn) admit(ctx context.Context) error {
	if t == nil || t.admitted {
		return nil
	}
	p := t.p
	p.mu.Lock()
	for p.pending >= p.ahead()*(p.workers-p.busy) {
		ch := make(chan struct{})
		p.waiters = append(p.waiters, ch)
		p.waiting++
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			p.mu.Lock()
			for i, w := range p.waiters {
				if w == ch {
					p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
					p.waiting--
					break
				}
			}
			p.notify()
			p.mu.Unlock()
			return ctx.Err()
		}
		p.mu.Lock()
	}
	p.pending++
	t.admitted = true
	t.admittedAt = time.Now()
	p.mu.Unlock()
	return nil
}

// pass records the hand-off's answer (handed: the run goes to its target);
// only the first call counts.
func (t *turn) pass(handed bool) {
	if t == nil || t.decided {
		return
	}
	p := t.p
	p.mu.Lock()
	t.decided, t.handed = true, handed
	p.unhanded--
	if t.admitted {
		p.pending--
		p.gateAvg = average(p.gateAvg, time.Since(t.admittedAt))
	}
	if handed {
		p.busy++
	}
	p.notify()
	p.mu.Unlock()
}

// send takes a send slot for the rest of the task (once).
func (t *turn) send(ctx context.Context) error {
	if t == nil || t.slot {
		return nil
	}
	select {
	case <-t.p.sends:
		t.slot = true
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// done marks the send finished (the driver answered): its slot and its
// place among the handed runs free at once, before the answer is queued
// for the ledger (which may make the task wait).
func (t *turn) done() {
	if t == nil || t.finished {
		return
	}
	t.finished = true
	p := t.p
	if t.slot {
		p.sends <- struct{}{}
	}
	p.mu.Lock()
	switch {
	case !t.decided:
		p.unhanded--
		if t.admitted {
			p.pending--
		}
	case t.handed:
		p.busy--
	}
	if !t.sendWall.IsZero() {
		p.sendAvg = average(p.sendAvg, time.Since(t.sendWall))
	}
	p.notify()
	p.mu.Unlock()
}

func (t *turn) end() { t.done() }
