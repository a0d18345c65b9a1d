package scheduler

import (
	"context"
	"sync"

	"github.com/ringjob/ringjob/internal/lifecycle"
)

// batcher turns many concurrent single-item requests (a trigger pool
// worker's, a driver's) into one database round trip per batch: requests
// that arrive while one batch is being applied go together into the next,
// so batches grow with the load and a lone request is applied at once.
// A caller waits for its own answer. Before Start and after Stop, do applies
// each request by itself, so nothing is refused or lost.
type batcher[T, R any] struct {
	lifecycle.Loop
	max   int
	apply func(ctx context.Context, items []T) ([]R, error) // one answer per item, or one error for all
	in    chan batchReq[T, R]
	// mu is held (shared) while a request is queued, so that Stop, which
	// takes it, knows no request enters after the loop's last drain.
	mu      sync.RWMutex
	running bool
}

type batchReq[T, R any] struct {
	item T
	done chan batchAnswer[R]
}

type batchAnswer[R any] struct {
	r   R
	err error
}

func newBatcher[T, R any](max int, apply func(ctx context.Context, items []T) ([]R, error)) *batcher[T, R] {
	return &batcher[T, R]{max: max, apply: apply, in: make(chan batchReq[T, R], max)}
}

func (b *batcher[T, R]) Start(ctx context.Context) {
	b.mu.Lock()
	b.running = true
	b.mu.Unlock()
	b.Loop.Start(ctx, b.run)
}

// Stop answers what is queued and ends the loop.
func (b *batcher[T, R]) Stop() {
	b.mu.Lock()
	b.running = false
	b.mu.Unlock()
	b.Loop.Stop()
}

// do applies item (in a batch when the loop runs) and returns its answer.
func (b *batcher[T, R]) do(ctx context.Context, item T) (R, error) {
	b.mu.RLock()
	if !b.running {
		b.mu.RUnlock()
		return b.alone(ctx, item)
	}
	req := batchReq[T, R]{item: item, done: make(chan batchAnswer[R], 1)}
	select {
	case b.in <- req:
		b.mu.RUnlock()
	case <-ctx.Done():
		b.mu.RUnlock()
		var zero R
		return zero, ctx.Err()
	}
	select {
	case a := <-req.done:
		return a.r, a.err
	case <-ctx.Done():
		var zero R
		return zero, ctx.Err()
	}
}

func (b *batcher[T, R]) alone(ctx context.Context, item T) (R, error) {
	rs, err := b.apply(ctx, []T{item})
	var r R
	if err == nil && len(rs) == 1 {
		r = rs[0]
	}
	return r, err
}

func (b *batcher[T, R]) run(ctx context.Context) {
	// Requests queued when the loop ends are still applied (one by one
	// would do too, but a batch is cheaper): their callers are waiting.
	defer func() {
		for {
			select {
			case req := <-b.in:
				r, err := b.alone(context.WithoutCancel(ctx), req.item)
				req.done <- batchAnswer[R]{r: r, err: err}
			default:
				return
			}
		}
	}()
	for {
		var batch []batchReq[T, R]
		select {
		case <-ctx.Done():
			return
		case req := <-b.in:
			batch = append(batch, req)
		}
	more:
		for len(batch) < b.max {
			select {
			case req := <-b.in:
				batch = append(batch, req)
			default:
				break more
			}
		}
		items := make([]T, len(batch))
		for i, req := range batch {
			items[i] = req.item
		}
		rs, err := b.apply(context.WithoutCancel(ctx), items)
		for i, req := range batch {
			a := batchAnswer[R]{err: err}
			if err == nil && i < len(rs) {
				a.r = rs[i]
			}
			req.done <- a
		}
	}
}
