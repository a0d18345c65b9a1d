package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/ringjob/ringjob/internal/kind"
)

// RunAccept records that a target accepted a run.
type RunAccept struct {
	ID      int64
	Target  string
	Message string
}

// RunAcceptBatch records accepted dispatches: the target always (a fast run
// may already have its outcome, and must still show where it ran), and the
// move dispatching -> running with the message only for runs still
// dispatching. Assignments are ordered so MySQL (left to right, seeing new
// values) and SQLite (old values) agree: state is assigned last.
func (s *Store) RunAcceptBatch(ctx context.Context, accepts []RunAccept) error {
	const per = 500
	for start := 0; start < len(accepts); start += per {
		chunk := accepts[start:min(start+per, len(accepts))]
		var tg, ms strings.Builder
		var tgA, msA, idA []any
		for _, a := range chunk {
			tg.WriteString(" WHEN ? THEN ?")
			tgA = append(tgA, a.ID, a.Target)
			ms.WriteString(" WHEN ? THEN ?")
			msA = append(msA, a.ID, a.Message)
			idA = append(idA, a.ID)
		}
		q := "UPDATE runs SET target = CASE id" + tg.String() + " ELSE target END" +
			", message = CASE WHEN state = ? THEN CASE id" + ms.String() + " ELSE message END ELSE message END" +
			", state = CASE WHEN state = ? THEN ? ELSE state END" +
			" WHERE id IN (" + placeholders(len(idA)) + ")"
		args := append(tgA, kind.RunDispatching)
		args = append(args, msA...)
		args = append(args, kind.RunDispatching, kind.RunRunning)
		args = append(args, idA...)
		if _, err := s.execRepeatable(ctx, q, args...); err != nil {
			return fmt.Errorf("record %d accepted dispatches: %w", len(chunk), err)
		}
	}
	return nil
}
