package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ringjob/ringjob/internal/kind"
)

// Kills of runs on executors and functions (not local processes, which
// their own replica stops and reports) are carried through run_kills: one
// row per run a kill stops, from the claim before the kill is sent until
// its answer is recorded (migration 0096). The row is what makes a kill
// sent once and a result reported meanwhile neither lost nor waited for:
//
//	RunKillClaim   before the kill is sent: the rows, or ErrKillInFlight
//	RunKillHold    a result reported meanwhile is kept on the row
//	RunKillSettle  the answer: accepted (killed; held results logged) or
//	               not (held results recorded as they came)
//	RunKillSettleExpired  any replica: rows past their deadline, whose
//	               sender died before the answer, settled as not accepted

// ErrKillInFlight: a kill that stops the run has been claimed and not
// answered yet; it is sent once, so nothing is sent again.
var ErrKillInFlight = errors.New("a kill that stops the run is already in flight")

// RunKillClaim claims the sending of one kill that stops the runs ids (the
// run asked for first, then those the target stops with it): each run still
// dispatching or running is marked kill_requested and gets a run_kills row
// that expires at deadlineMs. It returns the runs claimed, in order (none
// when ids[0] has ended: nothing to kill), or ErrKillInFlight, with nothing
// changed, when a kill of any of them is in flight already.
func (s *Store) RunKillClaim(ctx context.Context, ids []int64, deadlineMs int64) ([]int64, error) {
	var claimed []int64
	err := s.retry(ctx, false, func() error {
		claimed = claimed[:0]
		return s.Tx(ctx, func(tx *Store) error {
			for i, id := range ids {
				// Read under lock (MySQL): the state the claim is made on is
				// the run's latest, and stays so until the claim commits.
				var state kind.RunState
				err := tx.db.QueryRowContext(ctx, "SELECT state FROM runs WHERE id = ?"+tx.d.forUpdate(), id).Scan(&state)
				if err != nil && !errors.Is(err, sql.ErrNoRows) {
					return fmt.Errorf("read run %d: %w", id, err)
				}
				if state != kind.RunDispatching && state != kind.RunRunning {
					if i == 0 {
						return nil // it has ended: nothing is claimed
					}
					continue
				}
				if _, err := tx.db.ExecContext(ctx, "INSERT INTO run_kills (run_id, deadline_ms) VALUES (?, ?)", id, deadlineMs); err != nil {
					if tx.d.isDuplicate(err) {
						return ErrKillInFlight
					}
					return fmt.Errorf("claim the kill of run %d: %w", id, err)
				}
				if _, err := tx.db.ExecContext(ctx, "UPDATE runs SET kill_requested = 1 WHERE id = ?", id); err != nil {
					return fmt.Errorf("request kill of run %d: %w", id, err)
				}
				claimed = append(claimed, id)
			}
			return nil
		})
	})
	if err != nil && !errors.Is(err, ErrKillInFlight) {
		return nil, fmt.Errorf("claim a kill of runs %v: %w", ids, err)
	}
	return claimed, err
}

// RunKillHold keeps res, a result reported for a run whose kill is in
// flight, until the kill's answer decides what it means. It reports false
// when no kill of the run is in flight (any more): then res is the run's
// to record as usual. A second result while one is held is appended to the
// run's log (the first result of a run wins) and reported true.
func (s *Store) RunKillHold(ctx context.Context, res RunResult) (bool, error) {
	if !res.State.Final() {
		return false, fmt.Errorf("hold a result of run %d: state %q is not final", res.ID, res.State)
	}
	r, err := s.execRetry(ctx, "UPDATE run_kills SET held_state = ?, held_code = ?, held_message = ?, held_ms = ? WHERE run_id = ? AND held_state IS NULL",
		res.State, res.Code, res.Message, res.FinishedMs, res.ID)
	if err != nil {
		return false, fmt.Errorf("hold the result of run %d for its kill: %w", res.ID, err)
	}
	if n, err := r.RowsAffected(); err != nil || n == 1 {
		return err == nil, err
	}
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM run_kills WHERE run_id = ?", res.ID).Scan(&n); err != nil {
		return false, fmt.Errorf("look for the kill of run %d: %w", res.ID, err)
	}
	if n == 0 {
		return false, nil
	}
	line := lateOutcomeLine(res, Run{State: kind.RunRunning}) + "; a result reported earlier is held for the kill in flight"
	return true, s.RunLogAppend(ctx, res.ID, line)
}

// KillSettled is what settling a kill did to one run.
type KillSettled struct {
	RunID int64
	// Held is the result the target reported while the kill was in flight
	// (nil: none).
	Held *RunResult
	// State is the run's state after the settling: killed for an accepted
	// kill (unless another outcome came first), the held result's state
	// for a refused one, still going when nothing was held.
	State kind.RunState
}

// RunKillSettle records the answer to the kill of runs ids (claimed by
// RunKillClaim). Accepted (killed non-nil, one outcome per run, in the
// order of ids): each run takes its killed outcome, and a result held for
// it is appended to its log, never applied. Not accepted (killed nil): the
// runs' kill requests are withdrawn and each held result is recorded as it
// came. The rows go in the same transaction, so exactly one settling
// decides, whichever replica makes it; one whose rows were settled
// already (past their deadline) still records an accepted kill on a run
// that has not ended.
func (s *Store) RunKillSettle(ctx context.Context, ids []int64, killed []RunResult) ([]KillSettled, error) {
	if killed != nil && len(killed) != len(ids) {
		return nil, fmt.Errorf("settle the kill of %d runs with %d outcomes", len(ids), len(killed))
	}
	var out []KillSettled
	err := s.retry(ctx, false, func() error {
		return s.Tx(ctx, func(tx *Store) error {
			var err error
			out, err = tx.settleKills(ctx, ids, killed, 0)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("settle the kill of runs %v: %w", ids, err)
	}
	return out, nil
}

// RunKillSettleExpired settles as not accepted up to limit kills whose
// deadline has passed before nowMs: their sender died before the answer
// came (a live sender answers before the deadline). It returns what it
// settled.
func (s *Store) RunKillSettleExpired(ctx context.Context, nowMs int64, limit int) ([]KillSettled, error) {
	// Looked for outside a transaction, which every replica does every
	// second and almost always finds nothing (SQLite's transactions take
	// the write lock); the settling reads the rows again under lock.
	rows, err := s.db.QueryContext(ctx, "SELECT run_id FROM run_kills WHERE deadline_ms < ? ORDER BY deadline_ms LIMIT ?", nowMs, limit)
	if err != nil {
		return nil, fmt.Errorf("list expired kills: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list expired kills: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return nil, err
	}
	var out []KillSettled
	err = s.retry(ctx, false, func() error {
		return s.Tx(ctx, func(tx *Store) error {
			var err error
			out, err = tx.settleKills(ctx, ids, nil, nowMs)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("settle expired kills: %w", err)
	}
	return out, nil
}

// settleKills is RunKillSettle in tx. expiredBefore > 0 settles only rows
// whose deadline is before it (rows another replica settled meanwhile are
// left alone).
func (s *Store) settleKills(ctx context.Context, ids []int64, killed []RunResult, expiredBefore int64) ([]KillSettled, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, 0, len(ids)+1)
	for _, id := range ids {
		args = append(args, id)
	}
	where := " WHERE run_id IN (" + placeholders(len(ids)) + ")"
	if expiredBefore > 0 {
		where += " AND deadline_ms < ?"
		args = append(args, expiredBefore)
	}
	// Locked (MySQL): a result being held waits for this transaction and
	// then finds no row, so it is recorded as usual (SQLite: one writer).
	rows, err := s.db.QueryContext(ctx, "SELECT run_id, held_state, held_code, held_message, held_ms FROM run_kills"+where+s.d.forUpdate(), args...)
	if err != nil {
		return nil, fmt.Errorf("read the kills in flight: %w", err)
	}
	held := map[int64]*RunResult{}
	present := map[int64]bool{}
	for rows.Next() {
		var id, ms int64
		var state, msg sql.NullString
		var code int
		if err := rows.Scan(&id, &state, &code, &msg, &ms); err != nil {
			rows.Close()
			return nil, err
		}
		present[id] = true
		if state.Valid {
			held[id] = &RunResult{ID: id, State: kind.RunState(state.String), Code: code, Message: msg.String, FinishedMs: ms, Source: SourceCallback}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if expiredBefore > 0 {
		kept := ids[:0:0]
		for _, id := range ids {
			if present[id] {
				kept = append(kept, id)
			}
		}
		if ids = kept; len(ids) == 0 {
			return nil, nil
		}
	}
	if _, err := s.db.ExecContext(ctx, "DELETE FROM run_kills"+where, args...); err != nil {
		return nil, fmt.Errorf("end the kills in flight: %w", err)
	}
	var outs []RunResult
	if killed != nil {
		outs = append(outs, killed...) // first: a held result of the same run is then late, and logged
	} else {
		clear := make([]any, len(ids))
		for i, id := range ids {
			clear[i] = id
		}
		if _, err := s.db.ExecContext(ctx, "UPDATE runs SET kill_requested = 0 WHERE id IN ("+placeholders(len(ids))+")", clear...); err != nil {
			return nil, fmt.Errorf("withdraw the kill requests: %w", err)
		}
	}
	for _, id := range ids {
		if h := held[id]; h != nil {
			outs = append(outs, *h)
		}
	}
	if len(outs) > 0 {
		if _, err := s.RunRecordOutcomes(ctx, outs); err != nil {
			return nil, err
		}
	}
	now, err := s.RunGetMany(ctx, ids)
	if err != nil {
		return nil, err
	}
	states := make(map[int64]kind.RunState, len(now))
	for _, r := range now {
		states[r.ID] = r.State
	}
	out := make([]KillSettled, len(ids))
	for i, id := range ids {
		out[i] = KillSettled{RunID: id, Held: held[id], State: states[id]}
	}
	return out, nil
}
