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
//
// Targets and messages are set by value, not by row: the runs of a batch
// mostly went to a few executors, so each column is a plain value or a CASE
// over a few id lists, where a CASE arm per row would cost the database
// rows x rows comparisons per statement.
func (s *Store) RunAcceptBatch(ctx context.Context, accepts []RunAccept) error {
	const per = 500
	for start := 0; start < len(accepts); start += per {
		chunk := accepts[start:min(start+per, len(accepts))]
		ids := make([]int64, len(chunk))
		targets := make([]any, len(chunk))
		messages := make([]any, len(chunk))
		idA := make([]any, len(chunk))
		for i, a := range chunk {
			ids[i], targets[i], messages[i], idA[i] = a.ID, a.Target, a.Message, a.ID
		}
		tgExpr, args := valueExpr("target", ids, targets, nil)
		msExpr, args := valueExpr("message", ids, messages, append(args, kind.RunDispatching))
		q := "UPDATE runs SET target = " + tgExpr +
			", message = CASE WHEN state = ? THEN " + msExpr + " ELSE message END" +
			", state = CASE WHEN state = ? THEN ? ELSE state END" +
			" WHERE id IN (" + placeholders(len(idA)) + ")"
		args = append(args, kind.RunDispatching, kind.RunRunning)
		args = append(args, idA...)
		prune, pargs := s.pruneRuns(ids)
		q += prune
		args = append(args, pargs...)
		if _, err := s.execRepeatable(ctx, q, args...); err != nil {
			return fmt.Errorf("record %d accepted dispatches: %w", len(chunk), err)
		}
	}
	return nil
}

// valueExpr is the value of col for each row of ids: "?" when all rows get
// the same value, else CASE WHEN id IN (...) THEN ? ... ELSE col END with one
// arm per distinct value. It appends its arguments to args.
func valueExpr(col string, ids []int64, vals []any, args []any) (string, []any) {
	type group struct {
		v   any
		ids []int64
	}
	var groups []*group
	byVal := map[any]*group{}
	for i, v := range vals {
		g := byVal[v]
		if g == nil {
			g = &group{v: v}
			byVal[v] = g
			groups = append(groups, g)
		}
		g.ids = append(g.ids, ids[i])
	}
	if len(groups) == 1 {
		return "?", append(args, groups[0].v)
	}
	var q strings.Builder
	q.WriteString("CASE")
	for _, g := range groups {
		q.WriteString(" WHEN id IN (" + placeholders(len(g.ids)) + ") THEN ?")
		for _, id := range g.ids {
			args = append(args, id)
		}
		args = append(args, g.v)
	}
	q.WriteString(" ELSE " + col + " END")
	return q.String(), args
}
