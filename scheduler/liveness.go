package scheduler

import (
	"sort"
	"sync"
	"time"

	"github.com/ringjob/ringjob/store"
)

// peerWatch is this node's own record of its peers' heartbeats, on its own
// clock and within one unbroken database session of its own (its liveness
// lock held throughout). Death needs evidence that survives a reconnect: when
// the database restarts, every session drops, every liveness lock is free
// for a moment and every heartbeat is as old as the outage; none of that
// says a peer died. So when this node's own session breaks, the record starts
// over, and a peer is only judged on what happened since:
//   - it heartbeat after our session began and its liveness lock is now free:
//     its process or its connection died (seen within a takeover interval);
//   - or its heartbeat has not changed for node_dead_after of our unbroken
//     session (a paused or cut-off process), whatever its lock says: its
//     session is ended (fenced) so it cannot look alive again unnoticed.
//
// Nothing here trusts another node's clock: "silent for" is measured by
// watching the heartbeat value change.
type peerWatch struct {
	mu      sync.Mutex
	session uint64
	seen    map[string]peerSeen
}

type peerSeen struct {
	hb      int64     // the heartbeat value last seen
	since   time.Time // our clock when that value was first seen
	changed bool      // the value changed at least once within our session
}

// observe records a node listing read within our session.
func (w *peerWatch) observe(session uint64, nodes []store.Node, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if session != w.session || w.seen == nil {
		w.session = session
		w.seen = map[string]peerSeen{}
	}
	present := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		present[n.ID] = true
		prev, ok := w.seen[n.ID]
		switch {
		case !ok:
			w.seen[n.ID] = peerSeen{hb: n.HeartbeatMs, since: now}
		case prev.hb != n.HeartbeatMs:
			w.seen[n.ID] = peerSeen{hb: n.HeartbeatMs, since: now, changed: true}
		}
	}
	for id := range w.seen {
		if !present[id] {
			delete(w.seen, id)
		}
	}
}

// silence is how long (our clock, our unbroken session) a node's heartbeat
// has not changed, and whether it changed at least once in our session.
func (w *peerWatch) silence(id string, now time.Time) (silent time.Duration, heartbeatSeen bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.seen[id]
	if !ok {
		return 0, false
	}
	return now.Sub(s.since), s.changed
}

// sessionIs reports whether the record belongs to session.
func (w *peerWatch) sessionIs(session uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.session == session
}

// peerView is the set of live nodes, used to share lock partitions.
type peerView struct {
	mu   sync.Mutex
	self string
	live []string
}

func (p *peerView) set(self string, live []string) {
	sort.Strings(live)
	p.mu.Lock()
	p.self, p.live = self, live
	p.mu.Unlock()
}

// partitionPlan says which partitions this node tries, in order, and how many
// it may hold: each of k live nodes takes ceil(P/k), starting at its own
// share, so replicas spread out instead of all reaching for partition 0.
func (p *peerView) partitionPlan(partitions int) (preferred []int, max int) {
	p.mu.Lock()
	live := append([]string(nil), p.live...)
	self := p.self
	p.mu.Unlock()
	k := len(live)
	rank := sort.SearchStrings(live, self)
	if k == 0 || rank >= k || live[rank] != self {
		k, rank = 1, 0
	}
	max = (partitions + k - 1) / k
	start := (rank * max) % partitions
	for i := 0; i < partitions; i++ {
		preferred = append(preferred, (start+i)%partitions)
	}
	return preferred, max
}
