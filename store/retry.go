package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// errClass says what a failed statement tells about the database's state.
type errClass int

const (
	errPermanent errClass = iota // not transient: report it
	// errConflict: the database rolled the statement back (deadlock, lock
	// wait timeout, busy); running it again is always safe.
	errConflict
	// errNotSent: the statement never reached the database (no connection
	// could be made); running it again is always safe.
	errNotSent
	// errMaybeApplied: the connection dropped while the statement was in
	// flight; it may or may not have been applied. Only statements whose
	// effect and answer do not change when repeated may run again.
	errMaybeApplied
)

// errRaced stands for a lost race that only asks to run again (a unique
// key taken by a concurrent insert); retry treats it as a conflict.
var errRaced = errors.New("lost a race with a concurrent write")

// classifyMySQL sorts MySQL/MariaDB errors (and the network errors under them).
func classifyMySQL(err error) errClass {
	if errors.Is(err, errRaced) {
		return errConflict
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1213, 1205: // deadlock, lock wait timeout
			return errConflict
		case 1040, 1203: // too many connections
			return errNotSent
		case 1053, 1927, 1317: // server shutdown in progress, connection killed, query interrupted
			return errMaybeApplied
		}
		return errPermanent
	}
	return classifyNet(err)
}

// classifyNet sorts errors of the connection itself.
func classifyNet(err error) errClass {
	var op *net.OpError
	switch {
	case errors.As(err, &op) && op.Op == "dial":
		return errNotSent
	case errors.Is(err, driver.ErrBadConn):
		return errNotSent // database/sql only sees it when nothing was sent
	case errors.Is(err, mysql.ErrInvalidConn), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNREFUSED):
		return errMaybeApplied
	case errors.As(err, &op):
		return errMaybeApplied
	}
	return errPermanent
}

// Retry budgets: lock conflicts clear in milliseconds; a database that went
// away (restart, failover) may take tens of seconds to come back.
const (
	retryFirstWait    = 5 * time.Millisecond
	retryMaxWait      = time.Second
	retryConflictMax  = 12
	retryConnLostSpan = 60 * time.Second
)

// retry runs op until it succeeds, fails for good, or the transient failure
// outlasts its budget (or ctx). repeatable says op may run again after a
// connection dropped mid-statement (errMaybeApplied): its effect and its
// answer are the same when it already ran once (a compare-and-set read back
// by token, an idempotent write). Waits are jittered so that two
// transactions that deadlocked do not meet again at once.
func (s *Store) retry(ctx context.Context, repeatable bool, op func() error) error {
	if s.inTx {
		return op() // a statement of a transaction that failed cannot run again alone (Store.Tx)
	}
	wait := retryFirstWait
	conflicts := 0
	var lostSince time.Time
	for {
		err := op()
		if err == nil {
			return nil
		}
		switch s.d.classify(err) {
		case errConflict:
			if conflicts++; conflicts >= retryConflictMax {
				return err
			}
		case errMaybeApplied, errNotSent:
			if s.d.classify(err) == errMaybeApplied && !repeatable {
				return err
			}
			if lostSince.IsZero() {
				lostSince = time.Now()
			} else if time.Since(lostSince) > retryConnLostSpan {
				return err
			}
		default:
			return err
		}
		d := wait/2 + rand.N(wait/2+1)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, retryMaxWait)
	}
}

// execRetry runs one autocommit statement, again after a lock conflict or
// when no connection could be made. A statement cut off mid-flight is not
// repeated: its caller acts on the rows it changed.
func (s *Store) execRetry(ctx context.Context, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := s.retry(ctx, false, func() (err error) {
		res, err = s.db.ExecContext(ctx, query, args...)
		return err
	})
	return res, err
}

// execRepeatable is execRetry for statements that may also be repeated after
// a connection dropped mid-statement: compare-and-set writes whose caller
// does not act on the count of changed rows (or reads its result back by
// token).
func (s *Store) execRepeatable(ctx context.Context, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := s.retry(ctx, true, func() (err error) {
		res, err = s.db.ExecContext(ctx, query, args...)
		return err
	})
	return res, err
}

// NewClaimToken is a random claim token for RunClaimBatch.
func NewClaimToken() int64 { return newToken() }

// newToken is a random claim token: it tells the rows one statement changed
// from those another changed.
func newToken() int64 {
	return rand.Int64N(1<<62) + 1
}
