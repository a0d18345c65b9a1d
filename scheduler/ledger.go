package scheduler

import (
	"context"
	"sync"
	"time"

	"github.com/ringjob/ringjob/internal/lifecycle"

	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/store"
)

// ledgerWriter batches run state changes that follow a dispatch. The claim is
// always written before a dispatch (it is what makes a fire exactly-once);
// what the target answered can be written a few milliseconds later, many rows
// per statement, because every change is guarded by the state it leaves: a
// late write never overrides a newer state.
type ledgerWriter struct {
	lifecycle.Loop
	st  *store.Store
	log *logrus.Entry
	in  chan ledgerOp
	// sent forgets the runs whose target this writer has recorded.
	sent *sentTargets

	mu   sync.Mutex
	held map[int64]heldAccept // accepts waiting acceptHold for their run's outcome
	// writing counts, per run, the outcome writes in progress for it: its
	// held accept waits for them (past acceptHold) instead of being written
	// beside an outcome that is about to land.
	writing map[int64]int
	// urgent says sends are waiting for the database (their hand-offs):
	// outcomes then wait, up to ledgerYield, so that a busy second's
	// hand-offs do not share the database with the outcomes of its first
	// sends. Nil: never.
	urgent   func() bool
	yieldMax time.Duration
	// batch is the most changes in one write (ledgerBatch; smaller in
	// tests, to hold several batches without thousands of runs).
	batch int
}

type heldAccept struct {
	u  store.RunUpdate
	at time.Time
}

type ledgerOp struct {
	final   bool // a final outcome (from dispatching or running); else accepted (dispatching -> running)
	u       store.RunUpdate
	flushed chan struct{} // a flush marker: closed once everything before it is written
}

const (
	ledgerBatch    = 1000                  // changes per write (the store splits statements)
	ledgerParallel = 3                     // writes at once
	ledgerLinger   = 25 * time.Millisecond // how long a write waits for more changes
	// acceptHold is how long an accept (dispatching -> running, with the
	// target) waits before it is written. The outcome of a short run comes
	// first (an executor's callback, a function's answer, a process's exit),
	// carries the target itself, and the accept is dropped (settled): one
	// row write less per run, a fifth of the database's work per fire at a
	// few thousand fires a second. A run that takes longer shows running
	// this much later.
	acceptHold = 200 * time.Millisecond
	// ledgerYield bounds how long outcomes wait for the hand-offs.
	ledgerYield = 300 * time.Millisecond
	// ledgerYieldMost bounds the outcomes held while they yield (five
	// seconds at 10,000 a second): past it they are written anyway.
	ledgerYieldMost = 50000
)

func newLedgerWriter(st *store.Store, log *logrus.Entry, sent *sentTargets) *ledgerWriter {
	return &ledgerWriter{st: st, log: log, in: make(chan ledgerOp, 8192), sent: sent, held: map[int64]heldAccept{}, writing: map[int64]int{}, yieldMax: ledgerYield, batch: ledgerBatch}
}

// write queues a change; it blocks only when the writer is far behind.
func (w *ledgerWriter) write(op ledgerOp) {
	w.in <- op
}

// flush waits until everything queued so far is written (or ctx ends).
func (w *ledgerWriter) flush(ctx context.Context) {
	done := make(chan struct{})
	select {
	case w.in <- ledgerOp{flushed: done}:
	case <-ctx.Done():
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

func (w *ledgerWriter) Start(ctx context.Context) { w.Loop.Start(ctx, w.run) }

// Stop writes what is queued and ends the writer.
func (w *ledgerWriter) Stop(ctx context.Context) {
	w.flush(ctx)
	w.Loop.Stop()
}

// outcomesWriting says outcomes of runs ids are being written: their held
// accepts wait until outcomesWritten says how that ended.
func (w *ledgerWriter) outcomesWriting(ids []int64) {
	w.mu.Lock()
	for _, id := range ids {
		w.writing[id]++
	}
	w.mu.Unlock()
}

// outcomesWritten ends outcomesWriting. When the write was committed
// (recorded) the runs are settled: their held accepts are dropped, as the
// outcome holds the target and the run is past running; when it failed,
// the accepts are written as usual.
func (w *ledgerWriter) outcomesWritten(ids []int64, recorded bool) {
	w.mu.Lock()
	for _, id := range ids {
		if w.writing[id]--; w.writing[id] <= 0 {
			delete(w.writing, id)
		}
	}
	w.mu.Unlock()
	if recorded {
		w.settled(ids)
	}
}

// settled drops the held accepts of runs whose outcome was recorded: the
// outcome holds the target, and the run is past running. Their sent
// targets are dropped too, which tells an accept that comes later (the
// ledger's batches linger and yield, an executor's callback does not) that
// its run has ended: it is dropped, not held (see apply).
func (w *ledgerWriter) settled(ids []int64) {
	w.mu.Lock()
	for _, id := range ids {
		delete(w.held, id)
	}
	w.mu.Unlock()
	w.sent.drop(ids...)
}

// writeHeld writes the held accepts older than acceptHold (all of them
// when all is set).
func (w *ledgerWriter) writeHeld(ctx context.Context, all bool) {
	now := time.Now()
	var due []store.RunAccept
	var ids []int64
	w.mu.Lock()
	for id, h := range w.held {
		if all || (now.Sub(h.at) >= acceptHold && w.writing[id] == 0) {
			due = append(due, store.RunAccept{ID: id, Target: h.u.Target, Message: h.u.Message})
			ids = append(ids, id)
			delete(w.held, id)
		}
	}
	w.mu.Unlock()
	if len(due) == 0 {
		return
	}
	if err := w.st.RunAcceptBatch(ctx, due); err != nil {
		w.log.WithError(err).WithField("runs", len(due)).Error("record accepted dispatches")
	}
	w.sent.drop(ids...)
}

func (w *ledgerWriter) run(ctx context.Context) {
	// Up to ledgerParallel batches are written at once: at 10,000 fires a
	// second one writer at a time fell behind (a 500-outcome statement
	// takes 50-80 ms on a busy machine), and the pool waited for it. Each
	// change is a compare-and-set on the state it leaves, so batches
	// written side by side cannot undo each other; a flush waits for every
	// batch before it.
	var inflight sync.WaitGroup
	slots := make(chan struct{}, ledgerParallel)
	defer inflight.Wait()
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	// Held accepts are written by this loop too (wall time, like the
	// linger: I/O batching, not scheduling).
	hold := time.NewTicker(acceptHold / 2)
	defer hold.Stop()
	for {
		var first ledgerOp
		select {
		case <-ctx.Done():
			return
		case <-hold.C:
			w.writeHeld(context.WithoutCancel(ctx), false)
			continue
		case first = <-w.in:
		}
		batch := append(make([]ledgerOp, 0, 64), first)
		// Linger: the outcomes of a busy second arrive over a few
		// milliseconds while the claims of the same second are still being
		// written. Waiting a moment writes them in fewer, larger statements
		// and keeps them from competing with those claims. A flush writes at
		// once. (Wall time, like a network timeout: this is I/O batching, not
		// scheduling.)
		linger.Reset(ledgerLinger)
	collect:
		for len(batch) < w.batch && first.flushed == nil {
			select {
			case op := <-w.in:
				batch = append(batch, op)
				if op.flushed != nil {
					break collect
				}
			case <-linger.C:
				break collect
			case <-ctx.Done():
				break collect
			}
		}
		if !linger.Stop() {
			select {
			case <-linger.C:
			default:
			}
		}
		batch = w.yield(ctx, batch)
		if batch[len(batch)-1].flushed != nil {
			inflight.Wait()
			w.apply(context.WithoutCancel(ctx), batch)
			continue
		}
		for len(batch) > 0 { // what yielded may be several writes' worth
			part := batch[:min(len(batch), w.batch)]
			batch = batch[len(part):]
			slots <- struct{}{}
			inflight.Add(1)
			go func() {
				defer func() { <-slots; inflight.Done() }()
				w.apply(context.WithoutCancel(ctx), part)
			}()
		}
	}
}

// yield holds outcomes while sends wait for their hand-offs (up to
// yieldMax), collecting more meanwhile, however many writes' worth (up to
// ledgerYieldMost). A flush does not wait.
//
// It used to stop at one write's worth. At 10,000 fires a second the
// first sends of a second filled a batch in tens of milliseconds, so up to
// three outcome statements ran beside the hand-offs through the busy part
// of the second (traced: 2.5 in flight from 100 to 450 ms), on a machine
// whose cores were then all busy, and the hand-offs took twice as long.
// Measured on a fresh private mariadbd per run (docs/benchmarks.md):
// yielding one write's worth took 10,000-job driver lag p99 from 620-1,735
// to 543-748 ms; yielding all of them, to about 300 ms.
func (w *ledgerWriter) yield(ctx context.Context, batch []ledgerOp) []ledgerOp {
	if batch[len(batch)-1].flushed != nil {
		return batch
	}
	yieldTo(ctx, w.urgent, w.yieldMax, w.in, func(op ledgerOp) bool {
		batch = append(batch, op)
		return op.flushed == nil && len(batch) < ledgerYieldMost
	})
	return batch
}

// yieldTo waits while urgent says sends wait for their hand-offs, up to
// most, handing what arrives on in meanwhile to add until add says enough
// (false). urgent nil: it returns at once. (Wall time, like a network
// timeout: this is I/O pacing, not scheduling.)
func yieldTo[T any](ctx context.Context, urgent func() bool, most time.Duration, in <-chan T, add func(T) bool) {
	if urgent == nil {
		return
	}
	deadline := time.Now().Add(most)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for urgent() && time.Now().Before(deadline) {
		select {
		case v := <-in:
			if !add(v) {
				return
			}
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}

func (w *ledgerWriter) apply(ctx context.Context, batch []ledgerOp) {
	var accepted, final []store.RunUpdate
	var markers []chan struct{}
	var ids []int64
	defer func() {
		w.sent.drop(ids...)
		for _, m := range markers {
			close(m)
		}
	}()
	for _, op := range batch {
		if op.flushed != nil {
			markers = append(markers, op.flushed)
			continue
		}
		if op.final {
			final = append(final, op.u)
			ids = append(ids, op.u.ID)
		} else {
			accepted = append(accepted, op.u)
		}
	}
	if len(accepted) > 0 {
		now := time.Now()
		w.mu.Lock()
		for _, u := range accepted {
			// A run this node sent stays in sent until the ledger has
			// recorded its accept or outcome: one missing there has its
			// outcome recorded already (settled), which carries the target.
			if !w.sent.has(u.ID) {
				continue
			}
			w.held[u.ID] = heldAccept{u: u, at: now}
		}
		w.mu.Unlock()
	}
	// A flush writes everything queued before it, held accepts included.
	w.writeHeld(ctx, len(markers) > 0)
	if len(final) > 0 {
		// The dispatcher's outcomes (a synchronous target's result, a
		// dispatch that failed) are outcomes like any other: the same
		// compare-and-set, the same follow-up marker.
		outs := make([]store.RunResult, len(final))
		for i, u := range final {
			outs[i] = store.RunResult{ID: u.ID, State: u.State, Code: u.Code, Message: u.Message, Target: u.Target, FinishedMs: u.FinishedMs, Source: store.SourceDispatch, JobID: u.JobID}
		}
		if _, err := w.st.RunRecordOutcomes(ctx, outs); err != nil {
			w.log.WithError(err).WithField("runs", len(final)).Error("record run outcomes")
		}
	}
}
