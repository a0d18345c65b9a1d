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
	// queued holds, per job, the runs in this replica's trigger pools (from
	// their submission to the end of their dispatch task, which always
	// runs), so serial execution keeps the order of runs that wait here
	// together: they are not in the database's in-flight list until handed.
	queued map[int64]map[int64]int
}

// enter notes that run of job is in a trigger pool; leave undoes it.
func (l *jobLocks) enter(job, run int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.queued == nil {
		l.queued = map[int64]map[int64]int{}
	}
	m := l.queued[job]
	if m == nil {
		m = map[int64]int{}
		l.queued[job] = m
	}
	m[run]++
}

func (l *jobLocks) leave(job, run int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.queued[job]
	if m[run]--; m[run] <= 0 {
		delete(m, run)
	}
	if len(m) == 0 {
		delete(l.queued, job)
	}
}

// queuedBefore reports whether a run of job with a lower id than run is in
// a trigger pool here.
func (l *jobLocks) queuedBefore(job, run int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id := range l.queued[job] {
		if id < run {
			return true
		}
	}
	return false
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
