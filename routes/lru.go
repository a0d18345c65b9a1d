package routes

import (
	"slices"
	"time"
)

// lruState is LEAST_RECENTLY_USED's per-job access order, eldest first
// (XXL-JOB ExecutorRouteLRU: a LinkedHashMap with accessOrder=true).
type lruState struct {
	validUntil time.Time
	order      map[int64][]string
}

// pickLRU: addresses new to the job are appended in candidate order (XXL-JOB's
// containsKey does not touch the access order, put of a new key appends);
// addresses no longer among the candidates are dropped; the eldest address is
// picked and becomes the most recent.
func (r *Router) pickLRU(jobID int64, candidates []string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &r.lru
	if r.expired(&s.validUntil) || s.order == nil {
		s.order = map[int64][]string{}
	}
	order := s.order[jobID]
	present := make(map[string]struct{}, len(candidates))
	for _, a := range candidates {
		present[a] = struct{}{}
	}
	// Drop vanished addresses, then append new ones.
	order = slices.DeleteFunc(order, func(a string) bool {
		_, ok := present[a]
		return !ok
	})
	known := make(map[string]struct{}, len(order))
	for _, a := range order {
		known[a] = struct{}{}
	}
	for _, a := range candidates {
		if _, ok := known[a]; !ok {
			known[a] = struct{}{}
			order = append(order, a)
		}
	}
	eldest := order[0]
	copy(order, order[1:])
	order[len(order)-1] = eldest
	s.order[jobID] = order
	return eldest
}
