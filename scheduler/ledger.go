package scheduler

import (
	"context"
	"time"

	"github.com/ringjob/ringjob/internal/lifecycle"

	"github.com/ringjob/ringjob/store"
	"github.com/sirupsen/logrus"
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
}

type ledgerOp struct {
	final   bool // a final outcome (from dispatching or running); else accepted (dispatching -> running)
	u       store.RunUpdate
	flushed chan struct{} // a flush marker: closed once everything before it is written
}

const (
	ledgerBatch  = 1000                  // changes per write (the store splits statements)
	ledgerLinger = 25 * time.Millisecond // how long a write waits for more changes
)

func newLedgerWriter(st *store.Store, log *logrus.Entry, sent *sentTargets) *ledgerWriter {
	return &ledgerWriter{st: st, log: log, in: make(chan ledgerOp, 8192), sent: sent}
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

func (w *ledgerWriter) run(ctx context.Context) {
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for {
		var first ledgerOp
		select {
		case <-ctx.Done():
			return
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
		for len(batch) < ledgerBatch && first.flushed == nil {
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
		w.apply(context.WithoutCancel(ctx), batch)
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
		ids = append(ids, op.u.ID)
		if op.final {
			final = append(final, op.u)
		} else {
			accepted = append(accepted, op.u)
		}
	}
	if len(accepted) > 0 {
		acc := make([]store.RunAccept, len(accepted))
		for i, u := range accepted {
			acc[i] = store.RunAccept{ID: u.ID, Target: u.Target, Message: u.Message}
		}
		if err := w.st.RunAcceptBatch(ctx, acc); err != nil {
			w.log.WithError(err).WithField("runs", len(accepted)).Error("record accepted dispatches")
		}
	}
	if len(final) > 0 {
		// The dispatcher's outcomes (a synchronous target's result, a
		// dispatch that failed) are outcomes like any other: the same
		// compare-and-set, the same follow-up marker.
		outs := make([]store.RunResult, len(final))
		for i, u := range final {
			outs[i] = store.RunResult{ID: u.ID, State: u.State, Code: u.Code, Message: u.Message, Target: u.Target, FinishedMs: u.FinishedMs, Source: store.SourceDispatch}
		}
		if _, err := w.st.RunRecordOutcomes(ctx, outs); err != nil {
			w.log.WithError(err).WithField("runs", len(final)).Error("record run outcomes")
		}
	}
}
