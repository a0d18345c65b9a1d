package store

import (
	"context"
	"sync"
	"sync/atomic"
)

// When runs is partitioned by day of scheduled_ms (retention.partitioned),
// a statement that finds runs by id alone probes the primary key of every
// partition. The hot path (claim, hand-off, accept, outcome, attempts)
// touches runs this process created moments before, so the store remembers
// their fire times and adds "AND scheduled_ms BETWEEN first AND last" to
// those statements: MariaDB then prunes to the day or two the batch lies
// in. scheduled_ms never changes after a run is inserted, so the condition
// holds for every row the statement is meant to find; a run whose fire time
// is not remembered (created by another replica, or long ago) makes the
// statement go without the condition, correct and only slower. Reads of
// runs by id (RunGet, RunGetMany) remember the fire times they return, so a
// callback reaching a replica that did not create its runs, or an API
// action on a run just read, prunes the statements that follow the read.

// runHintsKeep is how many runs' fire times each generation holds: two
// generations remember the last 200,000 to 400,000 runs created here
// (minutes at 1,000 fires/s), about 20 MB at most.
const runHintsKeep = 200_000

// runHints remembers the fire times of the runs this process created, while
// the runs table is partitioned. Shared by a Store and its transactions.
type runHints struct {
	on        atomic.Bool // runs is partitioned: remember and prune
	mu        sync.Mutex
	cur, prev map[int64]int64 // run id -> scheduled_ms
}

func newRunHints() *runHints { return &runHints{cur: map[int64]int64{}} }

// partitioned records whether runs is partitioned (so whether to prune).
func (h *runHints) partitioned(on bool) {
	if h != nil {
		h.on.Store(on)
	}
}

// remember records the fire times of new runs (ids[i] at ms[i]).
func (h *runHints) remember(ids, ms []int64) {
	if h == nil || !h.on.Load() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, id := range ids {
		if len(h.cur) >= runHintsKeep {
			h.prev, h.cur = h.cur, make(map[int64]int64, runHintsKeep)
		}
		h.cur[id] = ms[i]
	}
}

// scheduledRange is the range of the fire times of ids, ok only when every
// one is known.
func (h *runHints) scheduledRange(ids []int64) (lo, hi int64, ok bool) {
	if h == nil || len(ids) == 0 || !h.on.Load() {
		return 0, 0, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, id := range ids {
		ms, found := h.cur[id]
		if !found {
			if ms, found = h.prev[id]; !found {
				return 0, 0, false
			}
		}
		if i == 0 {
			lo, hi = ms, ms
		}
		lo, hi = min(lo, ms), max(hi, ms)
	}
	return lo, hi, true
}

// firedRun is a run as read, whole or in part: its id and fire time.
type firedRun interface {
	fire() (id, scheduledMs int64)
}

func (r Run) fire() (int64, int64)             { return r.ID, r.ScheduledMs }
func (r RunCallbackView) fire() (int64, int64) { return r.ID, r.ScheduledMs }

// rememberRuns records the fire times of runs just read.
func rememberRuns[R firedRun](h *runHints, rs []R) {
	if h == nil || len(rs) == 0 || !h.on.Load() {
		return
	}
	ids, ms := make([]int64, len(rs)), make([]int64, len(rs))
	for i, r := range rs {
		ids[i], ms[i] = r.fire()
	}
	h.remember(ids, ms)
}

// pruneRuns is the condition that lets a statement on runs found by these
// ids read only their partitions ("" when not partitioned or a fire time is
// unknown), with its arguments. It goes at the end of the WHERE clause.
func (s *Store) pruneRuns(ids []int64) (string, []any) {
	lo, hi, ok := s.hints.scheduledRange(ids)
	if !ok {
		return "", nil
	}
	return " AND scheduled_ms BETWEEN ? AND ?", []any{lo, hi}
}

// detectPartitionedRuns looks whether runs is partitioned (at open, and
// after partition maintenance); errors leave pruning off.
func (s *Store) detectPartitionedRuns(ctx context.Context) {
	if _, partitioned, err := s.RunPartitions(ctx); err == nil {
		s.hints.partitioned(partitioned)
	}
}
