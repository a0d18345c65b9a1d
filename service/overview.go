package service

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ringjob/ringjob/store"
)

// heldRecently is how recently a replica must have taken a lock partition
// for it to count as holding it: replicas take their partitions on every
// pre-read (about once a second), so an older hold is a past one.
const heldRecently = 10 * time.Second

// Replica is a scheduler node with the lock partitions it holds now.
type Replica struct {
	store.Node
	Partitions []int // taken within heldRecently, ascending
}

// Replicas lists the scheduler nodes known to the database, with their
// heartbeats and held partitions.
func (s *Service) Replicas(ctx context.Context) ([]Replica, error) {
	nodes, err := s.st.NodeList(ctx)
	if err != nil {
		return nil, err
	}
	holds, err := s.st.PartitionHolds(ctx)
	if err != nil {
		return nil, err
	}
	since := s.clock.Now().Add(-heldRecently).UnixMilli()
	held := map[string][]int{}
	for _, h := range holds {
		if h.Holder != "" && h.HeldMs >= since {
			held[h.Holder] = append(held[h.Holder], h.ID)
		}
	}
	out := make([]Replica, 0, len(nodes))
	for _, n := range nodes {
		ps := held[n.ID]
		sort.Ints(ps)
		out = append(out, Replica{Node: n, Partitions: ps})
	}
	return out, nil
}

// RegisteredExecutors lists the executors that registered by heartbeat, of
// groupID (0: all) within onlyGroups (nil: all).
func (s *Service) RegisteredExecutors(ctx context.Context, groupID int64, onlyGroups []int64) ([]store.RegisteredExecutor, error) {
	if groupID < 0 {
		return nil, invalid("group_id", "must be a positive id, got %d", groupID)
	}
	es, err := s.st.RegisteredExecutors(ctx, groupID, onlyGroups)
	if err != nil {
		return nil, err
	}
	if len(es) == 0 {
		return es, nil
	}
	// Busy or idle: the runs running on each address, of the groups the
	// caller may see.
	running, err := s.st.RunningByTarget(ctx, onlyGroups)
	if err != nil {
		return nil, err
	}
	for i := range es {
		es[i].Running = running[strings.TrimSuffix(es[i].Address, "/")]
	}
	return es, nil
}

// JobCounts counts the jobs and the enabled jobs of groupID (0: all) within
// onlyGroups (nil: all).
func (s *Service) JobCounts(ctx context.Context, groupID int64, onlyGroups []int64) (jobs, enabled int64, err error) {
	if groupID < 0 {
		return 0, 0, invalid("group_id", "must be a positive id, got %d", groupID)
	}
	jobs, enabled, err = s.st.JobCounts(ctx, groupID, onlyGroups)
	if err != nil {
		return 0, 0, fmt.Errorf("count jobs: %w", err)
	}
	return jobs, enabled, nil
}
