package store

import (
	"context"
	"fmt"

	"github.com/ringjob/ringjob/internal/kind"
)

// RunListHanded lists up to limit runs of owner that were handed to their
// target before handedBeforeMs (0: any time) and are still dispatching: the
// sender never recorded an answer. Whether each arrived is asked of its
// target (see RunHandBack).
func (s *Store) RunListHanded(ctx context.Context, owner string, handedBeforeMs int64, limit int) ([]Run, error) {
	if handedBeforeMs <= 0 {
		handedBeforeMs = 1<<62 - 1
	}
	rows, err := s.db.QueryContext(ctx, "SELECT "+runCols+" FROM runs WHERE "+s.d.liveRuns()+"owner = ? AND state = ? AND handed_ms > 0 AND handed_ms < ? ORDER BY scheduled_ms LIMIT ?",
		owner, kind.RunDispatching, handedBeforeMs, limit)
	if err != nil {
		return nil, fmt.Errorf("list handed, unanswered runs of node %s: %w", owner, err)
	}
	runs, err := collectRuns(rows)
	if err != nil {
		return nil, fmt.Errorf("list handed, unanswered runs of node %s: %w", owner, err)
	}
	return runs, nil
}

// RunHandBackParams take back a handed run its target never received.
type RunHandBackParams struct {
	ID   int64
	From string // the owner that handed it (dead, or an earlier process of To)
	To   string
	// HandedBeforeMs: only a hand-off before this time (0: any).
	HandedBeforeMs int64
	Message        string
}

// RunHandBack undoes the hand-off of a run its target says it never
// received: the run, still dispatching and owned by From, becomes To's
// claimed, unhanded run (compare-and-set, so of several survivors one takes
// it, and a result recorded meanwhile keeps the run), to be handed and sent
// again, same run, same id. It reports whether it took the run.
func (s *Store) RunHandBack(ctx context.Context, p RunHandBackParams) (bool, error) {
	before := p.HandedBeforeMs
	if before <= 0 {
		before = 1<<62 - 1
	}
	res, err := s.execRetry(ctx, "UPDATE runs SET owner = ?, handed_ms = 0, claim_token = ?, message = ? WHERE id = ? AND owner = ? AND state = ? AND handed_ms > 0 AND handed_ms < ?",
		p.To, newToken(), p.Message, p.ID, p.From, kind.RunDispatching, before)
	if err != nil {
		return false, fmt.Errorf("take back run %d from node %s: %w", p.ID, p.From, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("take back run %d from node %s: rows affected: %w", p.ID, p.From, err)
	}
	return n == 1, nil
}

// RunCountHanded counts owner's runs handed to their target and still
// dispatching (no answer recorded).
func (s *Store) RunCountHanded(ctx context.Context, owner string) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM runs WHERE "+s.d.liveRuns()+"owner = ? AND state = ? AND handed_ms > 0", owner, kind.RunDispatching).Scan(&n); err != nil {
		return 0, fmt.Errorf("count handed, unanswered runs of node %s: %w", owner, err)
	}
	return n, nil
}
