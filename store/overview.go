package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/ringjob/ringjob/internal/kind"
)

// PartitionHold is which node took a lock partition last, and when.
type PartitionHold struct {
	ID     int
	Holder string
	HeldMs int64
}

// PartitionHolds lists the lock partitions with their last holder.
func (s *Store) PartitionHolds(ctx context.Context) ([]PartitionHold, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT id, holder, held_ms FROM lock_partitions ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("list lock partitions: %w", err)
	}
	defer rows.Close()
	var out []PartitionHold
	for rows.Next() {
		var p PartitionHold
		if err := rows.Scan(&p.ID, &p.Holder, &p.HeldMs); err != nil {
			return nil, fmt.Errorf("list lock partitions: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// RegisteredExecutor is an executor of the registry with its group.
type RegisteredExecutor struct {
	GroupID      int64 // 0 when no group has its app name
	AppName      string
	Address      string
	Protocol     string // the group's protocol
	RegisteredMs int64  // its first heartbeat (0 when registered before this was kept)
	UpdatedMs    int64  // its last heartbeat
	// Running counts the runs running on it (RunningByTarget); the
	// service fills it in.
	Running int
}

// RegisteredExecutors lists the registry, by app name then address, of the
// groups in visible (nil: all, with the executors of unknown app names).
func (s *Store) RegisteredExecutors(ctx context.Context, groupID int64, visible []int64) ([]RegisteredExecutor, error) {
	q := "SELECT COALESCE(g.id, 0), r.app_name, r.address, COALESCE(g.protocol, ''), r.registered_ms, r.updated_ms " +
		"FROM executor_registry r LEFT JOIN job_groups g ON g.app_name = r.app_name WHERE 1=1"
	var args []any
	if groupID > 0 {
		q += " AND g.id = ?"
		args = append(args, groupID)
	}
	q, args = onlyGroups(q, args, "g.id", visible)
	rows, err := s.db.QueryContext(ctx, q+" ORDER BY r.app_name, r.address LIMIT 10000", args...)
	if err != nil {
		return nil, fmt.Errorf("list registered executors: %w", err)
	}
	defer rows.Close()
	var out []RegisteredExecutor
	for rows.Next() {
		var e RegisteredExecutor
		if err := rows.Scan(&e.GroupID, &e.AppName, &e.Address, &e.Protocol, &e.RegisteredMs, &e.UpdatedMs); err != nil {
			return nil, fmt.Errorf("list registered executors: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// JobCounts counts jobs, and enabled jobs, of a group (0: all) within
// visible (nil: all). Served by index jobs_enabled.
func (s *Store) JobCounts(ctx context.Context, groupID int64, visible []int64) (jobs, enabled int64, err error) {
	q := "SELECT COUNT(*), COALESCE(SUM(enabled), 0) FROM jobs WHERE 1=1"
	var args []any
	if groupID > 0 {
		q += " AND group_id = ?"
		args = append(args, groupID)
	}
	q, args = onlyGroups(q, args, "group_id", visible)
	if err := s.db.QueryRowContext(ctx, q, args...).Scan(&jobs, &enabled); err != nil {
		return 0, 0, fmt.Errorf("count jobs: %w", err)
	}
	return jobs, enabled, nil
}

// RunningByTarget counts the running runs per target (as recorded on the
// runs, trailing "/" removed), of the groups in visible (nil: all): what an
// executor is busy with. Running runs belong to a replica (their owner,
// moved on takeover), so this reads one range of index
// runs_owner_live (MySQL/MariaDB) or runs_owner_state_time per replica in
// nodes, never the whole runs table.
func (s *Store) RunningByTarget(ctx context.Context, visible []int64) (map[string]int, error) {
	nodes, err := s.NodeList(ctx)
	if err != nil {
		return nil, fmt.Errorf("count running runs by target: %w", err)
	}
	out := map[string]int{}
	if len(nodes) == 0 {
		return out, nil
	}
	args := make([]any, 0, len(nodes)+1)
	for _, n := range nodes {
		args = append(args, n.ID)
	}
	args = append(args, kind.RunRunning)
	q, args := onlyGroups("SELECT target, COUNT(*) FROM runs WHERE "+s.d.liveRuns()+"owner IN ("+placeholders(len(nodes))+") AND state = ?", args, "group_id", visible)
	rows, err := s.db.QueryContext(ctx, q+" GROUP BY target", args...)
	if err != nil {
		return nil, fmt.Errorf("count running runs by target: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var target string
		var n int
		if err := rows.Scan(&target, &n); err != nil {
			return nil, fmt.Errorf("count running runs by target: %w", err)
		}
		out[strings.TrimSuffix(target, "/")] += n
	}
	return out, rows.Err()
}
