package scheduler

import "sync"

// sentTargets remembers where this node sent each run until the ledger has
// recorded it (the accept or the outcome, written in batches a few
// milliseconds after the send). A fast executor calls back before that; the
// callback's authorization needs the run's target, and without this it
// re-read the run until the ledger had caught up.
type sentTargets struct {
	mu sync.Mutex
	m  map[int64]string
}

func newSentTargets() *sentTargets { return &sentTargets{m: map[int64]string{}} }

func (s *sentTargets) put(runID int64, target string) {
	s.mu.Lock()
	s.m[runID] = target
	s.mu.Unlock()
}

func (s *sentTargets) get(runID int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[runID]
}

func (s *sentTargets) has(runID int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[runID]
	return ok
}

func (s *sentTargets) drop(ids ...int64) {
	s.mu.Lock()
	for _, id := range ids {
		delete(s.m, id)
	}
	s.mu.Unlock()
}
