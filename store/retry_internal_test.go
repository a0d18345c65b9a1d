package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
)

func TestClassifyMySQL(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	read := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	for _, c := range []struct {
		err  error
		want errClass
	}{
		{&mysql.MySQLError{Number: 1213, Message: "Deadlock found"}, errConflict},
		{fmt.Errorf("claim: %w", &mysql.MySQLError{Number: 1205}), errConflict},
		{&mysql.MySQLError{Number: 1062}, errPermanent},
		{&mysql.MySQLError{Number: 1053}, errMaybeApplied},
		{fmt.Errorf("x: %w", dial), errNotSent},
		{read, errMaybeApplied},
		{mysql.ErrInvalidConn, errMaybeApplied},
		{errors.New("syntax"), errPermanent},
	} {
		require.Equal(t, c.want, classifyMySQL(c.err), "%v", c.err)
	}
}

func TestRetryRepeatsOnlyWhatIsSafe(t *testing.T) {
	s := &Store{d: mysqlDialect{}}
	ctx := context.Background()
	calls := 0
	err := s.retry(ctx, false, func() error {
		calls++
		if calls < 3 {
			return &mysql.MySQLError{Number: 1213}
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 3, calls, "a deadlock victim runs again")

	calls = 0
	err = s.retry(ctx, false, func() error { calls++; return mysql.ErrInvalidConn })
	require.ErrorIs(t, err, mysql.ErrInvalidConn)
	require.Equal(t, 1, calls, "a statement that may have applied is not repeated unless repeatable")

	calls = 0
	err = s.retry(ctx, true, func() error {
		calls++
		if calls < 3 {
			return mysql.ErrInvalidConn
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 3, calls)

	calls = 0
	err = s.retry(ctx, true, func() error { calls++; return &mysql.MySQLError{Number: 1213} })
	require.Error(t, err)
	require.Equal(t, retryConflictMax, calls, "conflicts give up after a bounded number of tries")
}

func TestClassifyPostgres(t *testing.T) {
	read := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	for _, c := range []struct {
		err  error
		want errClass
	}{
		{&pgconn.PgError{Code: "40001", Message: "could not serialize access"}, errConflict},
		{fmt.Errorf("claim: %w", &pgconn.PgError{Code: "40P01", Message: "deadlock detected"}), errConflict},
		{&pgconn.PgError{Code: "55P03"}, errConflict},
		{&pgconn.PgError{Code: "23505"}, errPermanent},
		{&pgconn.PgError{Code: "53300"}, errNotSent},
		{&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, errMaybeApplied},
		{&pgconn.PgError{Code: "08006"}, errMaybeApplied},
		{read, errMaybeApplied},
		{errRaced, errConflict},
		{errors.New("syntax"), errPermanent},
	} {
		require.Equal(t, c.want, classifyPostgres(c.err), "%v", c.err)
	}
}

// Two transactions that lock two rows in opposite orders deadlock on a real
// PostgreSQL: the victim's error is a conflict, which TxRetry runs again —
// once for each conflict, and never after a try that succeeded.
func TestPostgresDeadlockIsRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := OpenPostgres(ctx, dbtest.Postgres(t))
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	require.NoError(t, st.LockPartitionsEnsure(ctx, 2))

	held, release := make(chan struct{}, 2), make(chan struct{})
	var tries [2][]error // what each try of each transaction returned
	errs := make(chan error, 2)
	for i, order := range [][2]int{{0, 1}, {1, 0}} {
		go func() {
			errs <- st.TxRetry(ctx, func(tx *Store) error {
				try := func() error {
					if _, err := tx.db.ExecContext(ctx, "UPDATE lock_partitions SET held_ms = held_ms + 1 WHERE id = ?", order[0]); err != nil {
						return err
					}
					if len(tries[i]) == 0 {
						held <- struct{}{} // both hold their first row
						<-release
					}
					_, err := tx.db.ExecContext(ctx, "UPDATE lock_partitions SET held_ms = held_ms + 1 WHERE id = ?", order[1])
					return err
				}
				err := try()
				tries[i] = append(tries[i], err)
				return err
			})
		}()
	}
	<-held
	<-held
	close(release)
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)

	// The count of tries is not fixed: under load a run of this test has
	// seen 4 where one deadlock makes 3. What is fixed is that a try ran
	// again only after a conflict, and that the last try of each committed.
	conflicts := 0
	for i := range tries {
		for k, err := range tries[i] {
			last := k == len(tries[i])-1
			if last {
				require.NoError(t, err, "transaction %d: its last try committed (tries: %v)", i, tries[i])
				continue
			}
			require.Equal(t, errConflict, classifyPostgres(err), "transaction %d ran again after try %d: %v", i, k+1, err)
			conflicts++
		}
	}
	require.GreaterOrEqual(t, conflicts, 1, "the two transactions deadlocked and one ran again (tries: %v)", tries)
	var sum int64
	require.NoError(t, st.db.QueryRowContext(ctx, "SELECT SUM(held_ms) FROM lock_partitions").Scan(&sum))
	require.EqualValues(t, 4, sum, "both transactions committed, each once")
}
