package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/lifecycle"
	"github.com/ringjob/ringjob/store"
)

// outcomeWriter is the one place outcomes reported from outside the
// dispatcher are recorded: executor callbacks, Lambda results, local process
// exits, kills and the lost-run check. Callers hand it outcomes and wait;
// it writes whatever has queued up meanwhile in one batch
// (store.RunRecordOutcomes: a compare-and-set on each run's state, one
// statement per 500 outcomes) and answers each caller once the batch is
// committed, so an executor's callback is acknowledged only when its result
// is durable. A failed write is returned to its callers (an executor then
// retries its callback), never dropped.
//
// There is no linger: while one batch is being written the next one
// gathers, so batches grow with the load and a lone outcome is written at
// once, unless sends are waiting for their hand-offs. Then it yields (up to
// ledgerYield, like the ledger): the outcomes of a busy second's first
// sends are written after its hand-offs, in fewer statements, instead of
// sharing the database and the machine with them. An executor's callback is
// then acknowledged up to that much later.
type outcomeWriter struct {
	lifecycle.Loop
	st      *store.Store
	log     *logrus.Entry
	metrics *Metrics
	in      chan *outcomeReq
	quit    chan struct{} // closed when the writer has stopped
	// settled hears the runs of every committed write (the ledger then
	// drops their held accepts).
	settled func(ids []int64)
	// writing hears the runs of every write before it starts, and written
	// after it ends (committed or not): the ledger holds their accepts
	// meanwhile.
	writing func(ids []int64)
	written func(ids []int64, committed bool)
	// urgent says sends are waiting for their hand-offs: a write then
	// waits, up to yieldMax, gathering the outcomes that come meanwhile
	// (see yieldTo). Nil: never.
	urgent   func() bool
	yieldMax time.Duration
}

type outcomeReq struct {
	outs    []store.RunResult
	applied []bool
	err     error
	done    chan struct{}
}

const (
	outcomeBatchMax = 5000             // outcomes per write (the store splits statements)
	outcomeTimeout  = 30 * time.Second // per write
)

// errWriterStopped is returned to callers whose outcomes were not written
// because the server is stopping; their reporters retry elsewhere.
var errWriterStopped = errors.New("the scheduler is stopping: outcome not recorded, report it again")

func newOutcomeWriter(st *store.Store, log *logrus.Entry, m *Metrics) *outcomeWriter {
	return &outcomeWriter{st: st, log: log, metrics: m, in: make(chan *outcomeReq, 4096), quit: make(chan struct{}), yieldMax: ledgerYield}
}

func (w *outcomeWriter) Start(ctx context.Context) { w.Loop.Start(ctx, w.run) }
func (w *outcomeWriter) Stop()                     { w.Loop.Stop() }

// record writes outcomes and reports, per outcome, whether it was applied.
func (w *outcomeWriter) record(ctx context.Context, outs []store.RunResult) ([]bool, error) {
	if len(outs) == 0 {
		return nil, nil
	}
	if !w.Started() {
		// A scheduler that was built but not started (a tool, a test) still
		// records: directly, one write per call.
		return w.st.RunRecordOutcomes(ctx, outs)
	}
	req := &outcomeReq{outs: outs, done: make(chan struct{})}
	select {
	case w.in <- req:
	case <-w.quit:
		return nil, errWriterStopped
	case <-ctx.Done():
		return nil, fmt.Errorf("record %d outcomes: %w", len(outs), ctx.Err())
	}
	select {
	case <-req.done:
		return req.applied, req.err
	case <-ctx.Done():
		// The write goes on and its result stands; the caller will not
		// hear it and may report again (a repeat is logged, not applied).
		return nil, fmt.Errorf("record %d outcomes: %w", len(outs), ctx.Err())
	}
}

func (w *outcomeWriter) run(ctx context.Context) {
	defer func() {
		close(w.quit)
		for {
			select {
			case req := <-w.in:
				req.err = errWriterStopped
				close(req.done)
			default:
				return
			}
		}
	}()
	for {
		var first *outcomeReq
		select {
		case <-ctx.Done():
			return
		case first = <-w.in:
		}
		batch := []*outcomeReq{first}
		n := len(first.outs)
	gather:
		for n < outcomeBatchMax {
			select {
			case req := <-w.in:
				batch = append(batch, req)
				n += len(req.outs)
			default:
				break gather
			}
		}
		if n < outcomeBatchMax {
			yieldTo(ctx, w.urgent, w.yieldMax, w.in, func(req *outcomeReq) bool {
				batch = append(batch, req)
				n += len(req.outs)
				return n < outcomeBatchMax
			})
		}
		w.write(context.WithoutCancel(ctx), batch, n)
	}
}

func (w *outcomeWriter) write(ctx context.Context, batch []*outcomeReq, n int) {
	all := make([]store.RunResult, 0, n)
	for _, req := range batch {
		all = append(all, req.outs...)
	}
	ids := make([]int64, len(all))
	for i, o := range all {
		ids[i] = o.ID
	}
	if w.writing != nil {
		w.writing(ids)
	}
	wctx, cancel := context.WithTimeout(ctx, outcomeTimeout)
	applied, err := w.st.RunRecordOutcomes(wctx, all)
	cancel()
	if w.written != nil {
		w.written(ids, err == nil)
	}
	if err != nil {
		w.log.WithError(err).WithField("outcomes", n).Warn("record run outcomes; their reporters are told to report again")
	} else if w.settled != nil {
		w.settled(ids)
	}
	i := 0
	for _, req := range batch {
		if err != nil {
			req.err = err
		} else {
			req.applied = applied[i : i+len(req.outs)]
			for j, ok := range req.applied {
				if ok {
					w.metrics.Outcomes.WithLabelValues(string(req.outs[j].State)).Inc()
				}
			}
		}
		i += len(req.outs)
		close(req.done)
	}
}
