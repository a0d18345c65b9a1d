package store

import (
	"database/sql"
	"errors"
	"fmt"
)

// ErrNotFound is returned when a row asked for by id does not exist.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned when a write violates a unique key (for example a
// group app name that is taken).
var ErrConflict = errors.New("conflict")

func notFound(err error, what string, id int64) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s %d: %w", what, id, ErrNotFound)
	}
	return err
}
