package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
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
