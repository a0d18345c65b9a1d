package routes

import "time"

// lfuMax is the count above which an address's count is re-randomised
// (XXL-JOB: lfuItemMap.get(address) > 1000000).
const lfuMax = 1_000_000

// lfuState is LEAST_FREQUENTLY_USED's per-job map address → use count
// (XXL-JOB ExecutorRouteLFU).
type lfuState struct {
	validUntil time.Time
	counts     map[int64]map[string]int
}

// pickLFU: addresses new to the job (or whose count passed 1 000 000) start at
// random(n), drawn in candidate order; addresses no longer among the
// candidates are dropped; the address with the lowest count is picked and its
// count goes up by one.
//
// Ties: XXL-JOB sorts the entries of a java.util.HashMap by count (a stable
// sort) and takes the first, so equal counts are decided by HashMap iteration
// order, which Go cannot reproduce. Ringjob breaks ties by candidate order:
// the first candidate with the lowest count wins.
func (r *Router) pickLFU(jobID int64, candidates []string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &r.lfu
	if r.expired(&s.validUntil) || s.counts == nil {
		s.counts = map[int64]map[string]int{}
	}
	m := s.counts[jobID]
	if m == nil {
		m = make(map[string]int, len(candidates))
		s.counts[jobID] = m
	}
	present := make(map[string]struct{}, len(candidates))
	for _, a := range candidates {
		present[a] = struct{}{}
		if c, ok := m[a]; !ok || c > lfuMax {
			m[a] = r.intn(len(candidates))
		}
	}
	for a := range m {
		if _, ok := present[a]; !ok {
			delete(m, a)
		}
	}
	best := candidates[0]
	for _, a := range candidates[1:] {
		if m[a] < m[best] {
			best = a
		}
	}
	m[best]++
	return best
}
