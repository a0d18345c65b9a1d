package scheduler

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/ringjob/ringjob/internal/lifecycle"
	"github.com/ringjob/ringjob/store"
)

// handoffGate claims and hands off runs (store.RunHandOff: scheduled ->
// dispatching with handed_ms, one compare-and-set) for the trigger pool
// workers, many runs per statement: each worker asks for its run just
// before sending it, and the runs asked for while a statement runs go in the
// next one. Until then a run waiting in the ring, the backlog or a pool's
// queue is still scheduled: if its replica dies, a takeover sends it.
//
// Every worker of a busy pool waits here, so the pool sends at most
// workers / (time a worker waits) runs a second. With one statement at a
// time a worker that asks while one runs waits for it and then for its own:
// up to two statements. When enough runs are waiting (handoffOverlapMin), a
// second statement starts alongside instead (up to handoffParallel), so a
// busy pool waits about one statement; a trickle still goes one statement
// at a time, so statements do not shrink to a run each. (A row costs the
// database about half as much in a statement of 1,000 as in one of 150:
// bench/stmt -handoff-per, 27 against 49 µs a run; waiting for 250 runs
// instead of 50 showed no lag gain end to end, and waiting for 150 at
// 5,000 jobs made 10 % fewer statements but neither mariadbd's CPU per fire
// lower nor lag better: docs/benchmarks.md.) Statements at once
// are safe: each is a compare-and-set on handed_ms = 0, so a run asked for
// twice is handed by one of them only.
type handoffGate struct {
	lifecycle.Loop
	waiting   atomic.Int64 // runs asked for and not answered yet
	st        *store.Store
	node      string
	clock     clockwork.Clock
	lateAfter time.Duration
	in        chan handoffReq
}

type handoffReq struct {
	id     int64
	target string // where it goes ("" for a run that fails before a send)
	// prior are the tokens of earlier hand-offs of the run whose answer was
	// lost (see store.RunHandOffParams.Prior).
	prior []int64
	done  chan handoffAnswer
}

type handoffAnswer struct {
	ok  bool
	err error
	// token marks the statement that carried the run: when err is set, it
	// may have handed the run all the same, so the next try names it.
	token int64
}

const (
	handoffBatch      = 1000
	handoffParallel   = 3
	handoffOverlapMin = 50
)

func newHandoffGate(st *store.Store, node string, clock clockwork.Clock, lateAfter time.Duration) *handoffGate {
	return &handoffGate{st: st, node: node, clock: clock, lateAfter: lateAfter, in: make(chan handoffReq, handoffBatch)}
}

func (g *handoffGate) Start(ctx context.Context) { g.Loop.Start(ctx, g.run) }
func (g *handoffGate) Stop()                     { g.Loop.Stop() }

// pass records that run id is handed to its target now. ok=false: it may
// not be sent (taken over, or already handed). An error: the database did
// not answer, and the statement, marked with token, may or may not have
// handed the run; a later pass that names token in prior gets the run if
// it did (handed, never sent).
func (g *handoffGate) pass(ctx context.Context, id int64, target string, prior []int64) (ok bool, token int64, err error) {
	req := handoffReq{id: id, target: target, prior: prior, done: make(chan handoffAnswer, 1)}
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case g.in <- req:
	case <-ctx.Done():
		return false, 0, ctx.Err()
	}
	select {
	case a := <-req.done:
		return a.ok, a.token, a.err
	case <-ctx.Done():
		return false, 0, ctx.Err()
	}
}

func (g *handoffGate) run(ctx context.Context) {
	finished := make(chan struct{}, handoffParallel)
	inflight := 0
	defer func() { // the statements started are answered before the gate stops
		for ; inflight > 0; inflight-- {
			<-finished
		}
	}()
	for {
		var batch []handoffReq
		select {
		case <-ctx.Done():
			return
		case <-finished:
			inflight--
			continue
		case r := <-g.in:
			batch = append(batch, r)
		}
		for {
		more:
			for len(batch) < handoffBatch {
				select {
				case r := <-g.in:
					batch = append(batch, r)
				default:
					break more
				}
			}
			if inflight == 0 || (inflight < handoffParallel && len(batch) >= handoffOverlapMin) {
				break
			}
			in := g.in
			if len(batch) >= handoffBatch {
				in = nil // full: wait for a statement to end
			}
			select {
			case r := <-in:
				batch = append(batch, r)
			case <-finished:
				inflight--
			}
		}
		inflight++
		go func() {
			defer func() { finished <- struct{}{} }()
			g.apply(ctx, batch)
		}()
	}
}

// busy says runs are waiting for their hand-off: sends wait on the
// database, so writes that can wait (outcomes) should.
func (g *handoffGate) busy() bool { return g.waiting.Load() > 0 }

func (g *handoffGate) apply(ctx context.Context, batch []handoffReq) {
	ids := make([]int64, len(batch))
	targets := make(map[int64]string, len(batch))
	var prior map[int64][]int64
	for i, r := range batch {
		ids[i] = r.id
		if r.target != "" {
			targets[r.id] = r.target
		}
		if len(r.prior) > 0 {
			if prior == nil {
				prior = map[int64][]int64{}
			}
			prior[r.id] = append(prior[r.id], r.prior...)
		}
	}
	token := store.NewClaimToken()
	// Not cut short by Stop: an answer never heard leaves runs unsent.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	handed, err := g.st.RunHandOff(cctx, store.RunHandOffParams{Owner: g.node, IDs: ids, NowMs: g.clock.Now().UnixMilli(), LateAfterMs: g.lateAfter.Milliseconds(), Targets: targets,
		Token: token, Prior: prior})
	ok := make(map[int64]bool, len(handed))
	for _, id := range handed {
		ok[id] = true
	}
	for _, r := range batch {
		a := handoffAnswer{ok: ok[r.id]}
		if ok[r.id] {
			delete(ok, r.id) // one send per run, even if two copies asked
		} else if err != nil {
			a.err, a.token = err, token
		}
		r.done <- a
	}
}
