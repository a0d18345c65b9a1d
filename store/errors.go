package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ErrNotFound is returned when a row asked for by id does not exist.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned when a write violates a unique key (for example a
// group app name that is taken).
var ErrConflict = errors.New("conflict")

// ErrVersionMismatch is returned by a conditional write (IfVersion) when
// the row's version is no longer the one the caller read.
var ErrVersionMismatch = errors.New("changed since it was read")

// ifVersion is the condition of a conditional write: any version when
// want is 0.
const ifVersionCond = " AND (? = 0 OR version = ?)"

// versionMismatchOr tells a conditional write that changed no row apart:
// the row is gone (ErrNotFound) or has another version.
func (s *Store) versionMismatchOr(ctx context.Context, table, what string, id, want int64) error {
	var v int64
	err := s.db.QueryRowContext(ctx, "SELECT version FROM "+table+" WHERE id = ?", id).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s %d: %w", what, id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("read version of %s %d: %w", what, id, err)
	}
	if want != 0 && v != want {
		return fmt.Errorf("%s %d is at version %d, not %d: %w", what, id, v, want, ErrVersionMismatch)
	}
	return nil
}

func notFound(err error, what string, id int64) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s %d: %w", what, id, ErrNotFound)
	}
	return err
}
