package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// RunSetAttempts records the routing attempts of a run (a JSON array). It
// is written only when a probe or a dispatch failed, so it costs nothing on
// the common path.
func (s *Store) RunSetAttempts(ctx context.Context, runID int64, attemptsJSON string) error {
	prune, pargs := s.pruneRuns([]int64{runID})
	if _, err := s.execRepeatable(ctx, "UPDATE runs SET attempts = ? WHERE id = ?"+prune, append([]any{attemptsJSON, runID}, pargs...)...); err != nil {
		return fmt.Errorf("record attempts of run %d: %w", runID, err)
	}
	return nil
}

// RunAttempts reads the routing attempts of a run ("" when none were recorded).
func (s *Store) RunAttempts(ctx context.Context, runID int64) (string, error) {
	var v sql.NullString
	err := s.db.QueryRowContext(ctx, "SELECT attempts FROM runs WHERE id = ?", runID).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("run %d: %w", runID, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("read attempts of run %d: %w", runID, err)
	}
	return v.String, nil
}
