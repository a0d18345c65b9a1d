package scheduler

import (
	"context"
	"sync"
)

// jobLocks serialises, per job, the steps from a dispatch's "what else of
// this job is in flight?" to its recorded hand-off. Without it two runs of a
// max-in-flight or block-strategy job checked at once could each see the
// other as not yet handed over and both be sent (three shards running under
// max_in_flight 2). Only jobs with such a check take it, and only on this
// replica: runs of one job are normally dispatched by the replica that owns
// its lock partition.
type jobLocks struct {
	mu    sync.Mutex
	locks map[int64]*jobLock
}

type jobLock struct {
	ch    chan struct{} // holds a token while the lock is held
	users int           // holders and waiters; the entry goes at 0
}

// lock takes job's lock, or gives up when ctx ends. The returned func
// releases it and must be called exactly once.
func (l *jobLocks) lock(ctx context.Context, job int64) (unlock func(), err error) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[int64]*jobLock{}
	}
	e := l.locks[job]
	if e == nil {
		e = &jobLock{ch: make(chan struct{}, 1)}
		l.locks[job] = e
	}
	e.users++
	l.mu.Unlock()
	leave := func() {
		l.mu.Lock()
		if e.users--; e.users == 0 {
			delete(l.locks, job)
		}
		l.mu.Unlock()
	}
	select {
	case e.ch <- struct{}{}:
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-e.ch
			leave()
		})
	}, nil
}
