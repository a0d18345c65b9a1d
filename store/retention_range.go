package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/ringjob/ringjob/internal/kind"
)

// The row purge works on primary-key ranges: ids grow with creation time,
// so the runs old enough to go are the ids below a boundary, found once by
// a binary search on the primary key, and each DELETE takes one contiguous
// id range (a few thousand clustered-index rows that sit on neighbouring
// pages) instead of a list of ids read beforehand. Whether a row in the
// range may go is decided by the statement itself (state, follow-up, age,
// the ids still needed), so nothing is read twice.

// RunIDBounds returns the lowest and highest run id (0, 0 when empty).
func (s *Store) RunIDBounds(ctx context.Context) (lo, hi int64, err error) {
	var l, h sql.NullInt64
	if err := s.db.QueryRowContext(ctx, "SELECT MIN(id), MAX(id) FROM runs").Scan(&l, &h); err != nil {
		return 0, 0, fmt.Errorf("read the id range of runs: %w", err)
	}
	return l.Int64, h.Int64, nil
}

// runAtOrAfter reads the first run with id >= id (ok false when none).
func (s *Store) runAtOrAfter(ctx context.Context, id int64) (gotID, createdMs int64, ok bool, err error) {
	err = s.db.QueryRowContext(ctx, "SELECT id, created_ms FROM runs WHERE id >= ? ORDER BY id LIMIT 1", id).Scan(&gotID, &createdMs)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("read the run at id %d: %w", id, err)
	}
	return gotID, createdMs, true, nil
}

// RunIDCreatedBefore returns the highest run id below which runs were
// created before createdBeforeMs: a binary search along the primary key
// (about 30 key lookups for 100 M rows), assuming ids grow with creation
// time. When the first run is already too young it returns the id before
// it (no run lies below: their logs are orphans), and the highest int64 when
// there is no run at all. Where ids and creation times disagree
// (runs created on replicas whose clocks differ), the boundary is one of the
// places where they cross: a run left beyond it goes on a later cycle, a
// younger run before it is kept by the age condition of the DELETE.
func (s *Store) RunIDCreatedBefore(ctx context.Context, createdBeforeMs int64) (int64, error) {
	lo, hi, err := s.RunIDBounds(ctx)
	if err != nil {
		return 0, err
	}
	if hi == 0 {
		return math.MaxInt64, nil
	}
	// Invariant: the run at lo is old (or lo is before the first run), the
	// first run at or after hi+1 is young (or there is none).
	if _, created, ok, err := s.runAtOrAfter(ctx, lo); err != nil || !ok || created >= createdBeforeMs {
		return lo - 1, err
	}
	if _, created, ok, err := s.runAtOrAfter(ctx, hi); err != nil || ok && created < createdBeforeMs {
		return hi, err
	}
	for lo < hi-1 {
		mid := lo + (hi-lo)/2
		id, created, ok, err := s.runAtOrAfter(ctx, mid)
		if err != nil {
			return 0, err
		}
		switch {
		case !ok || created >= createdBeforeMs:
			hi = mid
		case id >= hi:
			return lo, nil
		default:
			lo = id
		}
	}
	return lo, nil
}

// RunNextID returns the first run id >= id and its creation time, and
// false when there is none.
func (s *Store) RunNextID(ctx context.Context, id int64) (next, createdMs int64, ok bool, err error) {
	return s.runAtOrAfter(ctx, id)
}

// RunLogNextRunID returns the first run id >= id that has log chunks.
func (s *Store) RunLogNextRunID(ctx context.Context, id int64) (int64, bool, error) {
	var got sql.NullInt64
	if err := s.db.QueryRowContext(ctx, "SELECT MIN(run_id) FROM run_logs WHERE run_id >= ?", id).Scan(&got); err != nil {
		return 0, false, fmt.Errorf("find logs from run %d: %w", id, err)
	}
	return got.Int64, got.Valid, nil
}

// runEndBefore is the condition "the run (table alias a) ended before ?":
// finished_ms, or created_ms for a run that never got an end time.
func runEndBefore(a string) string {
	return "(CASE WHEN " + a + "finished_ms > 0 THEN " + a + "finished_ms ELSE " + a + "created_ms END) < ?"
}

// RunPurgeRangeParams delete the runs of one id range that are past their
// retention.
type RunPurgeRangeParams struct {
	FromID, ToID int64 // inclusive
	CutoffMs     int64 // rows that ended before this go
	// Groups limits the purge to these groups (nil: all); NotGroups
	// excludes these.
	Groups, NotGroups []int64
	// Keep are runs that stay whatever their state and age (those still
	// referenced, those the reports have not counted); ids outside the
	// range are ignored.
	Keep []int64
}

// RunPurgeRange deletes, in one transaction, the runs with FromID <= id <=
// ToID that are final, have no pending follow-up, are past their cutoff and
// are not in Keep; then the log chunks and idempotency keys of the runs of
// the range that are gone.
func (s *Store) RunPurgeRange(ctx context.Context, p RunPurgeRangeParams) (RunPurgeResult, error) {
	var out RunPurgeResult
	q := "DELETE FROM runs WHERE id BETWEEN ? AND ? AND state IN (" + placeholders(len(kind.FinalRunStates)) + ") AND (followup IS NULL OR followup <> 0) AND " + runEndBefore("")
	args := []any{p.FromID, p.ToID}
	for _, st := range kind.FinalRunStates {
		args = append(args, st)
	}
	args = append(args, p.CutoffMs)
	q, args = groupFilter(q, args, "group_id", p.Groups, p.NotGroups)
	if keep := idsWithin(p.Keep, p.FromID, p.ToID); len(keep) > 0 {
		q += " AND id NOT IN (" + placeholders(len(keep)) + ")"
		args = append(args, int64Args(keep)...)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return out, fmt.Errorf("purge runs %d-%d: begin: %w", p.FromID, p.ToID, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return out, fmt.Errorf("purge runs %d-%d: %w", p.FromID, p.ToID, err)
	}
	out.Runs, _ = res.RowsAffected()
	if out.Runs > 0 {
		gone := "run_id BETWEEN ? AND ? AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.id = %s.run_id)"
		res, err = tx.ExecContext(ctx, "DELETE FROM run_logs WHERE "+fmt.Sprintf(gone, "run_logs"), p.FromID, p.ToID)
		if err != nil {
			return out, fmt.Errorf("purge logs of runs %d-%d: %w", p.FromID, p.ToID, err)
		}
		out.Logs, _ = res.RowsAffected()
		if _, err := tx.ExecContext(ctx, "DELETE FROM run_keys WHERE "+fmt.Sprintf(gone, "run_keys"), p.FromID, p.ToID); err != nil {
			return out, fmt.Errorf("purge idempotency keys of runs %d-%d: %w", p.FromID, p.ToID, err)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM failure_deliveries WHERE delivered_ms > 0 AND "+fmt.Sprintf(gone, "failure_deliveries"), p.FromID, p.ToID); err != nil {
			return out, fmt.Errorf("purge failure records of runs %d-%d: %w", p.FromID, p.ToID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return out, fmt.Errorf("purge runs %d-%d: commit: %w", p.FromID, p.ToID, err)
	}
	return out, nil
}

// RunLogPurgeRange deletes the log chunks of runs FromID..ToID whose run is
// gone, or is final with no pending follow-up and past its log cutoff, and
// not in Keep. It returns the number of chunks deleted.
func (s *Store) RunLogPurgeRange(ctx context.Context, p RunPurgeRangeParams) (int64, error) {
	// A log stays while its run exists and still wants it.
	q := "DELETE FROM run_logs WHERE run_id BETWEEN ? AND ? AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = run_logs.run_id AND (r.state NOT IN (" +
		placeholders(len(kind.FinalRunStates)) + ") OR r.followup = 0 OR NOT (" + runEndBefore("r.") + ")"
	args := []any{p.FromID, p.ToID}
	for _, st := range kind.FinalRunStates {
		args = append(args, st)
	}
	args = append(args, p.CutoffMs)
	// Groups outside the walk keep their logs here (their own walk decides).
	switch {
	case p.Groups != nil:
		q += " OR r.group_id NOT IN (" + placeholders(len(p.Groups)) + ")"
		args = append(args, int64Args(p.Groups)...)
	case len(p.NotGroups) > 0:
		q += " OR r.group_id IN (" + placeholders(len(p.NotGroups)) + ")"
		args = append(args, int64Args(p.NotGroups)...)
	}
	q += "))"
	if keep := idsWithin(p.Keep, p.FromID, p.ToID); len(keep) > 0 {
		q += " AND run_id NOT IN (" + placeholders(len(keep)) + ")"
		args = append(args, int64Args(keep)...)
	}
	res, err := s.execRetry(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("purge logs of runs %d-%d: %w", p.FromID, p.ToID, err)
	}
	return res.RowsAffected()
}

func groupFilter(q string, args []any, col string, in, notIn []int64) (string, []any) {
	if in != nil {
		if len(in) == 0 {
			return q + " AND 1 = 0", args
		}
		q += " AND " + col + " IN (" + placeholders(len(in)) + ")"
		args = append(args, int64Args(in)...)
	}
	if len(notIn) > 0 {
		q += " AND " + col + " NOT IN (" + placeholders(len(notIn)) + ")"
		args = append(args, int64Args(notIn)...)
	}
	return q, args
}

// idsWithin returns the ids of sorted that lie in [from, to]; sorted must be
// in ascending order.
func idsWithin(sorted []int64, from, to int64) []int64 {
	i := sort.Search(len(sorted), func(i int) bool { return sorted[i] >= from })
	j := sort.Search(len(sorted), func(i int) bool { return sorted[i] > to })
	return sorted[i:j]
}
