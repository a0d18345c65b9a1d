package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// conn is what the store's methods run statements on: the pool, or one
// transaction (see Tx). *sql.DB satisfies it.
type conn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
	Conn(ctx context.Context) (*sql.Conn, error)
}

var _ conn = (*sql.DB)(nil)

// errNestedTx is returned by code that begins its own transaction on a Store
// that is already one; such code must use Tx, which joins the outer one.
var errNestedTx = errors.New("store: a transaction was begun inside a transaction; use Store.Tx")

// txConn runs statements in tx. Beginning another transaction is refused
// (it would not be part of this one); Conn reaches the pool.
type txConn struct {
	*sql.Tx
	pool *sql.DB
}

func (t txConn) BeginTx(context.Context, *sql.TxOptions) (*sql.Tx, error) { return nil, errNestedTx }
func (t txConn) Conn(ctx context.Context) (*sql.Conn, error)              { return t.pool.Conn(ctx) }

// txWrapper is a conn that wraps the statements of the transactions begun
// on it too (tests that record the statements a Store sends).
type txWrapper interface {
	wrapTx(conn) conn
}

// Tx runs fn with a Store whose every method works in one transaction: it
// commits when fn returns nil and rolls back otherwise. This is how a change
// and its audit event are written together (both or neither). Inside a Tx, a
// nested Tx joins the outer transaction. fn must use only the Store it is
// given: on SQLite (one connection) a statement on the outer Store would wait
// for the transaction forever.
func (s *Store) Tx(ctx context.Context, fn func(tx *Store) error) error {
	if s.inTx {
		return fn(s)
	}
	tx, err := s.pool.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	ts := *s // same dialect, pool and secrets box
	ts.db, ts.inTx = txConn{Tx: tx, pool: s.pool}, true
	if w, ok := s.db.(txWrapper); ok {
		ts.db = w.wrapTx(ts.db)
	}
	if err := fn(&ts); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit transaction: %w", err)
	}
	return nil
}

// TxRetry is Tx run again, whole, when the database rolled it back for a
// lock conflict (a deadlock, a lock wait timeout): fn must be safe to run
// again from the start.
func (s *Store) TxRetry(ctx context.Context, fn func(tx *Store) error) error {
	if s.inTx {
		return fn(s)
	}
	return s.retry(ctx, false, func() error { return s.Tx(ctx, fn) })
}
