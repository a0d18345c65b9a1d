package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ringjob/ringjob/internal/kind"
)

// NodeLiveness is a node's hold on its own life-long named lock (MySQL
// GET_LOCK, a PostgreSQL session-level advisory lock, on a dedicated
// connection). The database frees the lock the moment
// the process or its connection dies, so other nodes see the death at once
// instead of after a heartbeat timeout. On SQLite it is a no-op.
type NodeLiveness struct {
	s    *Store
	node string
	mu   sync.Mutex
	conn *sql.Conn
	// session counts the lock's acquisitions: it changes whenever the lock
	// was lost (the connection dropped, the database restarted) and taken
	// again, so an observer knows its own view of the database broke.
	session uint64
}

// nodeLockName is the name of a node's liveness lock. Named locks are
// server-wide, so it is scoped by the database: two Ringjob installations
// (or test databases) on one server never see each other's nodes. A hash
// keeps it within MySQL's 64 characters.
func (s *Store) nodeLockName(node string) string {
	sum := sha256.Sum256([]byte(s.database + "\x00" + node))
	return "ringjob_node_" + hex.EncodeToString(sum[:16])
}

// NodeLivenessAcquire takes the node's named lock. Call it before the node
// registers or owns any run.
func (s *Store) NodeLivenessAcquire(ctx context.Context, node string) (*NodeLiveness, error) {
	l := &NodeLiveness{s: s, node: node}
	if _, err := l.Ensure(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// Ensure checks the lock connection and takes the lock again if it was lost.
// It returns the session number: the same number as at the last call means
// the lock was held without a break in between (on SQLite it is always 1).
func (l *NodeLiveness) Ensure(ctx context.Context) (session uint64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.s.d.namedLocks() {
		if l.session == 0 {
			l.session = 1
		}
		return l.session, nil
	}
	locks := l.s.d.locks()
	if l.conn != nil {
		held, err := locks.heldHere(ctx, l.conn, l.s.nodeLockName(l.node))
		if err == nil && held {
			return l.session, nil
		}
		l.conn.Close()
		l.conn = nil
	}
	conn, err := l.s.db.Conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("node %s liveness lock: get connection: %w", l.node, err)
	}
	if err := locks.get(ctx, conn, l.s.nodeLockName(l.node), 5*time.Second); err != nil {
		conn.Close()
		return 0, fmt.Errorf("node %s liveness lock: %w", l.node, err)
	}
	l.conn = conn
	l.session++
	return l.session, nil
}

// Release frees the lock (graceful stop).
func (l *NodeLiveness) Release(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		_ = l.s.d.locks().release(ctx, l.conn, l.s.nodeLockName(l.node))
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
	_, held, err := s.d.locks().holder(ctx, s.db, s.nodeLockName(node))
	if err != nil {
		return false, fmt.Errorf("check liveness lock of node %s: %w", node, err)
	}
	return !held, nil
}

// NodeFence ends the database session that holds a node's liveness lock
// (MySQL KILL CONNECTION, PostgreSQL pg_terminate_backend), so the lock is free. It is for a node that stopped
// heartbeating while its session lives on (a paused process, a frozen VM):
// once fenced, and declared dead, it can no longer look alive. It reports
// whether a session was ended; always false on databases without named locks.
func (s *Store) NodeFence(ctx context.Context, node string) (bool, error) {
	if !s.d.namedLocks() {
		return false, nil
	}
	holder, held, err := s.d.locks().holder(ctx, s.db, s.nodeLockName(node))
	if err != nil {
		return false, fmt.Errorf("find the liveness session of node %s: %w", node, err)
	}
	if !held {
		return false, nil
	}
	if err := s.d.locks().endSession(ctx, s.db, holder); err != nil {
		return false, fmt.Errorf("end the liveness session %d of node %s: %w", holder, node, err)
	}
	return true, nil
}

// ErrDeclaredDead is returned by NodeHeartbeat when another node declared
// this one dead (and took over its runs) since its last heartbeat.
var ErrDeclaredDead = errors.New("declared dead by another node")

// NodeHeartbeatParams record that a node is alive.
type NodeHeartbeatParams struct {
	ID    string
	Host  string
	NowMs int64
}

// NodeHeartbeat records that a node is alive, registering it when it has no
// row yet. A heartbeat is a compare-and-set against NodeDeclareDead: when
// another node declared this one dead first, it changes nothing and returns
// ErrDeclaredDead; the node must drop what it holds and NodeRejoin.
func (s *Store) NodeHeartbeat(ctx context.Context, p NodeHeartbeatParams) error {
	res, err := s.execRetry(ctx, "UPDATE nodes SET heartbeat_ms = ?, stopped_ms = 0 WHERE id = ? AND reaped_ms <> heartbeat_ms", p.NowMs, p.ID)
	if err != nil {
		return fmt.Errorf("heartbeat node %s: %w", p.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	// No row changed: not registered, declared dead, or (MySQL counts
	// changed rows only) the same heartbeat written twice.
	var hb, reaped int64
	err = s.db.QueryRowContext(ctx, "SELECT heartbeat_ms, reaped_ms FROM nodes WHERE id = ?", p.ID).Scan(&hb, &reaped)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return s.NodeRejoin(ctx, p)
	case err != nil:
		return fmt.Errorf("heartbeat node %s: %w", p.ID, err)
	case hb == reaped:
		return fmt.Errorf("heartbeat node %s: %w at heartbeat %d", p.ID, ErrDeclaredDead, hb)
	}
	return nil
}

// NodeRejoin registers a node or makes a node that was declared dead alive
// again (a fresh start, or a rejoin after it dropped what it held).
func (s *Store) NodeRejoin(ctx context.Context, p NodeHeartbeatParams) error {
	// The new heartbeat must differ from the one the node was declared dead at.
	if _, err := s.execRetry(ctx, "UPDATE nodes SET heartbeat_ms = CASE WHEN ? > reaped_ms THEN ? ELSE reaped_ms + 1 END, stopped_ms = 0, host = ? WHERE id = ?",
		p.NowMs, p.NowMs, p.Host, p.ID); err != nil {
		return fmt.Errorf("rejoin node %s: %w", p.ID, err)
	}
	if _, err := s.execRetry(ctx, s.d.insertIgnore()+" INTO nodes (id, host, started_ms, heartbeat_ms) VALUES (?, ?, ?, ?)", p.ID, p.Host, p.NowMs, p.NowMs); err != nil {
		return fmt.Errorf("register node %s: %w", p.ID, err)
	}
	return nil
}

// NodeDeclareDead declares a node dead as of the heartbeat the caller saw,
// unless it heartbeat since (compare-and-set against NodeHeartbeat): once it
// returns true, the node can no longer heartbeat without learning it was
// declared dead, and any node may take over its runs (each run moves by
// compare-and-set on its owner).
func (s *Store) NodeDeclareDead(ctx context.Context, id string, heartbeatMs int64) (bool, error) {
	res, err := s.execRetry(ctx, "UPDATE nodes SET reaped_ms = heartbeat_ms WHERE id = ? AND heartbeat_ms = ? AND reaped_ms <> heartbeat_ms", id, heartbeatMs)
	if err != nil {
		return false, fmt.Errorf("declare node %s dead: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("declare node %s dead: %w", id, err)
	}
	return n == 1, nil
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

// NodeDelete removes nodes whose heartbeat is older than beforeMs and that
// own no unfinished runs (housekeeping).
func (s *Store) NodeDelete(ctx context.Context, beforeMs int64) (int64, error) {
	res, err := s.db.ExecContext(ctx, "DELETE FROM nodes WHERE heartbeat_ms < ? AND NOT EXISTS (SELECT 1 FROM runs WHERE "+s.d.liveRuns()+"runs.owner = nodes.id AND runs.state IN (?, ?))",
		beforeMs, kind.RunScheduled, kind.RunDispatching)
	if err != nil {
		return 0, fmt.Errorf("delete old nodes: %w", err)
	}
	return res.RowsAffected()
}
