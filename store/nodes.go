package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/ringjob/ringjob/internal/kind"
)

// NodeLiveness is a node's hold on its own life-long named lock (MySQL
// GET_LOCK on a dedicated connection). The database frees the lock the moment
// the process or its connection dies, so other nodes see the death at once
// instead of after a heartbeat timeout. On SQLite it is a no-op.
type NodeLiveness struct {
	s    *Store
	node string
	mu   sync.Mutex
	conn *sql.Conn
}

func nodeLockName(node string) string { return "ringjob_node_" + node }

// NodeLivenessAcquire takes the node's named lock. Call it before the node
// registers or owns any run.
func (s *Store) NodeLivenessAcquire(ctx context.Context, node string) (*NodeLiveness, error) {
	l := &NodeLiveness{s: s, node: node}
	if err := l.Ensure(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// Ensure checks the lock connection and takes the lock again if it was lost.
func (l *NodeLiveness) Ensure(ctx context.Context) error {
	if !l.s.d.namedLocks() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		var held sql.NullInt64
		err := l.conn.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?) = CONNECTION_ID()", nodeLockName(l.node)).Scan(&held)
		if err == nil && held.Valid && held.Int64 == 1 {
			return nil
		}
		l.conn.Close()
		l.conn = nil
	}
	conn, err := l.s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("node %s liveness lock: get connection: %w", l.node, err)
	}
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 5)", nodeLockName(l.node)).Scan(&got); err != nil || !got.Valid || got.Int64 != 1 {
		conn.Close()
		return fmt.Errorf("node %s liveness lock: GET_LOCK returned %v: %v", l.node, got, err)
	}
	l.conn = conn
	return nil
}

// Release frees the lock (graceful stop).
func (l *NodeLiveness) Release(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		l.conn.ExecContext(ctx, "SELECT RELEASE_LOCK(?)", nodeLockName(l.node))
		l.conn.Close()
		l.conn = nil
	}
}

// NodeLockFree reports whether a node's liveness lock is free (the node is
// dead). It is always false on databases without named locks.
func (s *Store) NodeLockFree(ctx context.Context, node string) (bool, error) {
	if !s.d.namedLocks() {
		return false, nil
	}
	var free int
	if err := s.db.QueryRowContext(ctx, "SELECT IS_FREE_LOCK(?)", nodeLockName(node)).Scan(&free); err != nil {
		return false, fmt.Errorf("check liveness lock of node %s: %w", node, err)
	}
	return free == 1, nil
}

// NodeHeartbeatParams record that a node is alive.
type NodeHeartbeatParams struct {
	ID    string
	Host  string
	NowMs int64
}

// NodeHeartbeat upserts the node's row with a fresh heartbeat.
func (s *Store) NodeHeartbeat(ctx context.Context, p NodeHeartbeatParams) error {
	res, err := s.db.ExecContext(ctx, "UPDATE nodes SET heartbeat_ms = ?, stopped_ms = 0 WHERE id = ?", p.NowMs, p.ID)
	if err != nil {
		return fmt.Errorf("heartbeat node %s: %w", p.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	if _, err := s.db.ExecContext(ctx, s.d.insertIgnore()+" INTO nodes (id, host, started_ms, heartbeat_ms) VALUES (?, ?, ?, ?)", p.ID, p.Host, p.NowMs, p.NowMs); err != nil {
		return fmt.Errorf("register node %s: %w", p.ID, err)
	}
	return nil
}

// NodeStop marks a node stopped (graceful exit), so others take its work at once.
func (s *Store) NodeStop(ctx context.Context, id string, nowMs int64) error {
	if _, err := s.db.ExecContext(ctx, "UPDATE nodes SET stopped_ms = ? WHERE id = ?", nowMs, id); err != nil {
		return fmt.Errorf("mark node %s stopped: %w", id, err)
	}
	return nil
}

// NodeList lists all nodes.
func (s *Store) NodeList(ctx context.Context) ([]Node, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT id, host, started_ms, heartbeat_ms, stopped_ms, reaped_ms FROM nodes ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	defer rows.Close()
	var out []Node
	for rows.Next() {
		var n Node
		if err := rows.Scan(&n.ID, &n.Host, &n.StartedMs, &n.HeartbeatMs, &n.StoppedMs, &n.ReapedMs); err != nil {
			return nil, fmt.Errorf("list nodes: %w", err)
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// NodeMarkReaped records that a dead node's runs were taken over as of its
// last heartbeat; a node that heartbeats again is considered anew.
func (s *Store) NodeMarkReaped(ctx context.Context, id string, heartbeatMs int64) error {
	if _, err := s.db.ExecContext(ctx, "UPDATE nodes SET reaped_ms = ? WHERE id = ? AND heartbeat_ms = ?", heartbeatMs, id, heartbeatMs); err != nil {
		return fmt.Errorf("mark node %s reaped: %w", id, err)
	}
	return nil
}

// NodeDelete removes nodes whose heartbeat is older than beforeMs and that
// own no unfinished runs (housekeeping).
func (s *Store) NodeDelete(ctx context.Context, beforeMs int64) (int64, error) {
	res, err := s.db.ExecContext(ctx, "DELETE FROM nodes WHERE heartbeat_ms < ? AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.owner = nodes.id AND runs.state IN (?, ?))",
		beforeMs, kind.RunScheduled, kind.RunDispatching)
	if err != nil {
		return 0, fmt.Errorf("delete old nodes: %w", err)
	}
	return res.RowsAffected()
}
