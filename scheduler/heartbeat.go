package scheduler

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/ringjob/ringjob/internal/lifecycle"

	"github.com/jonboulle/clockwork"
	"github.com/ringjob/ringjob/store"
	"github.com/sirupsen/logrus"
)

// heartbeat keeps this node's row fresh, keeps its liveness lock held, and
// refreshes the view of which peers are alive.
type heartbeat struct {
	lifecycle.Loop
	cfg      Config
	node     string
	host     string
	st       *store.Store
	clock    clockwork.Clock
	log      *logrus.Entry
	liveness *store.NodeLiveness
	peers    *peerView
}

func (h *heartbeat) Start(ctx context.Context) { h.Loop.Start(ctx, h.run) }
func (h *heartbeat) Stop()                     { h.Loop.Stop() }

func (h *heartbeat) run(ctx context.Context) {
	for {
		if err := h.beat(ctx); err != nil && ctx.Err() == nil {
			h.log.WithError(err).Warn("heartbeat failed")
		}
		if !lifecycle.Sleep(ctx, h.clock, h.cfg.HeartbeatInterval) {
			return
		}
	}
}

func (h *heartbeat) beat(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := h.liveness.Ensure(ctx); err != nil {
		return err
	}
	now := h.clock.Now()
	if err := h.st.NodeHeartbeat(ctx, store.NodeHeartbeatParams{ID: h.node, Host: h.host, NowMs: now.UnixMilli()}); err != nil {
		return err
	}
	nodes, err := h.st.NodeList(ctx)
	if err != nil {
		return err
	}
	var live []string
	for _, n := range nodes {
		if n.ID == h.node {
			live = append(live, n.ID)
			continue
		}
		dead, err := isDead(ctx, h.st, h.cfg, n, now)
		if err != nil {
			return err
		}
		if !dead {
			live = append(live, n.ID)
		}
	}
	h.peers.set(h.node, live)
	return nil
}

// isDead reports whether a node stopped, stopped heartbeating, or (MySQL)
// lost its liveness lock because its process or connection died.
func isDead(ctx context.Context, st *store.Store, cfg Config, n store.Node, now time.Time) (bool, error) {
	if n.StoppedMs > 0 || now.UnixMilli()-n.HeartbeatMs > cfg.NodeDeadAfter.Milliseconds() {
		return true, nil
	}
	return st.NodeLockFree(ctx, n.ID)
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
