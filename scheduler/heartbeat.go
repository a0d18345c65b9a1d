package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/ringjob/ringjob/internal/lifecycle"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/store"
)

// heartbeat keeps this node's row fresh, keeps its liveness lock held, and
// refreshes the view of which peers share the lock partitions.
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
	watch    *peerWatch
	// rejoin is called when this node learns another declared it dead: it
	// stops dispatching, drops what it holds and registers again.
	rejoin func(ctx context.Context) error
}

func (h *heartbeat) Start(ctx context.Context) { h.Loop.Start(ctx, h.run) }
func (h *heartbeat) Stop()                     { h.Loop.Stop() }

func (h *heartbeat) run(ctx context.Context) {
	every(ctx, h.clock, h.cfg.HeartbeatInterval, h.log, "heartbeat failed", h.beat)
}

func (h *heartbeat) beat(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	session, err := h.liveness.Ensure(ctx)
	if err != nil {
		return err
	}
	err = h.st.NodeHeartbeat(ctx, store.NodeHeartbeatParams{ID: h.node, Host: h.host, NowMs: h.clock.Now().UnixMilli()})
	if errors.Is(err, store.ErrDeclaredDead) {
		h.log.Warn("another node declared this node dead (it was paused or cut off from the database for longer than node_dead_after) and took over its runs: stopping dispatch, dropping the time ring and rejoining")
		if err := h.rejoin(ctx); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	nodes, err := h.st.NodeList(ctx)
	if err != nil {
		return err
	}
	now := h.clock.Now()
	h.watch.observe(session, nodes, now)
	// Partition shares go to the nodes that heartbeat within the lease: a
	// paused node's partitions move to the others after partition_lease,
	// before its fires are misfires. (It is not dead for that: it keeps its
	// runs until it is declared dead; the partition lock rows keep two nodes
	// from pre-reading one partition at once.)
	live := []string{h.node}
	for _, n := range nodes {
		if n.ID == h.node || n.StoppedMs > 0 || n.Declared() {
			continue
		}
		if silent, _ := h.watch.silence(n.ID, now); silent <= h.cfg.PartitionLease {
			live = append(live, n.ID)
		}
	}
	h.peers.set(h.node, live)
	return nil
}
