package routes

import "time"

// roundMax is the counter value above which round restarts at random
// (XXL-JOB: count.get() > 1000000).
const roundMax = 1_000_000

// roundState is ROUND's per-job counter (XXL-JOB ExecutorRouteRound).
type roundState struct {
	validUntil time.Time
	count      map[int64]int
}

// pickRound: the first trigger of a job (and the first after a counter passed
// 1 000 000 or after the 24 h clear) starts the counter at random 0..99; every
// later trigger adds one. The pick is candidates[count % n].
func (r *Router) pickRound(jobID int64, candidates []string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &r.round
	if r.expired(&s.validUntil) || s.count == nil {
		s.count = map[int64]int{}
	}
	c, ok := s.count[jobID]
	if !ok || c > roundMax {
		c = r.intn(100)
	} else {
		c++
	}
	s.count[jobID] = c
	return candidates[c%len(candidates)]
}
