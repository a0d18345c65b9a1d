package scheduler

import (
	"sync"
	"time"
)

// runWaits remembers which runs went back to the ring to wait for which
// runs of their job (serial execution, max in flight on a target that runs
// every dispatch at once). When this replica records the outcome of a run
// waited for, the runs waiting for it are offered again at once (the
// ring's hurry) instead of at the next second's tick: without it a job whose
// runs take a few hundred milliseconds fell a whole second behind, and
// stayed there, each fire dispatched twice. An outcome recorded on
// another replica wakes nothing here; the tick offers the run then.
type runWaits struct {
	mu      sync.Mutex
	waiters map[int64][]runWaiter // by the run waited for
	hurry   func(ids ...int64)    // offer runs waiting in the ring now
}

type runWaiter struct {
	run   int64
	since time.Time // wall time: entries nobody wakes are dropped
}

// runWaitsKept bounds how long a wait is remembered: past it the tick has
// offered the run again long since.
const runWaitsKept = 10 * time.Second

// runWaitsPurgeAt is the number of remembered runs above which add drops
// the old ones.
const runWaitsPurgeAt = 10000

func newRunWaits(hurry func(ids ...int64)) *runWaits {
	return &runWaits{waiters: map[int64][]runWaiter{}, hurry: hurry}
}

// add remembers that run waits for the runs in on.
func (w *runWaits) add(run int64, on []int64) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.waiters) > runWaitsPurgeAt {
		for id, ws := range w.waiters {
			if now.Sub(ws[len(ws)-1].since) > runWaitsKept {
				delete(w.waiters, id)
			}
		}
	}
	for _, id := range on {
		w.waiters[id] = append(w.waiters[id], runWaiter{run: run, since: now})
	}
}

// settled hears the runs whose outcome this replica recorded.
func (w *runWaits) settled(ids []int64) {
	var wake []int64
	w.mu.Lock()
	for _, id := range ids {
		for _, r := range w.waiters[id] {
			wake = append(wake, r.run)
		}
		delete(w.waiters, id)
	}
	w.mu.Unlock()
	if len(wake) > 0 {
		w.hurry(wake...)
	}
}
