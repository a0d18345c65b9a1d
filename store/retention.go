package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/ringjob/ringjob/internal/kind"
)

// RunAge is what retention needs to know of a run to decide whether it may go.
type RunAge struct {
	ID              int64
	GroupID         int64
	State           kind.RunState
	CreatedMs       int64
	FinishedMs      int64
	FollowupPending bool // a failure (or success with children) whose follow-up is not done
}

// unfinishedRunStates are the states a run leaves again.
var unfinishedRunStates = []kind.RunState{kind.RunScheduled, kind.RunDispatching, kind.RunRunning}

const runAgeCols = "id, group_id, state, created_ms, finished_ms, COALESCE(followup, 1)"

func collectRunAges(rows *sql.Rows) ([]RunAge, error) {
	defer rows.Close()
	var out []RunAge
	for rows.Next() {
		var a RunAge
		var followup int
		if err := rows.Scan(&a.ID, &a.GroupID, &a.State, &a.CreatedMs, &a.FinishedMs, &followup); err != nil {
			return nil, fmt.Errorf("read run ages: %w", err)
		}
		a.FollowupPending = followup == 0
		out = append(out, a)
	}
	return out, rows.Err()
}

// RunsNeeded lists the runs with id <= upToID that must not be deleted
// whatever their age:
//   - runs not final yet (scheduled, dispatching, running);
//   - runs whose follow-up (retry, alarm, children) is pending (followup = 0);
//   - the run a not-yet-final run retries (retry_of) or was triggered by as a
//     child (its idempotency key parent-run-ID), so a chain stays readable
//     while any part of it is still going;
//   - runs the report roll-up has not counted yet (run_reports_pending).
//
// Every list comes from an index (runs_owner_live on MySQL/MariaDB,
// runs_owner_state_time elsewhere; runs_followup; the
// pending table's key), so the cost is the number of such runs, not the
// size of the table.
func (s *Store) RunsNeeded(ctx context.Context, upToID int64) (map[int64]bool, error) {
	needed := map[int64]bool{}
	owners, err := s.runOwners(ctx)
	if err != nil {
		return nil, err
	}
	for _, chunk := range chunkStrings(owners, 500) {
		args := make([]any, 0, len(chunk)+4)
		for _, o := range chunk {
			args = append(args, o)
		}
		for _, st := range unfinishedRunStates {
			args = append(args, st)
		}
		// Children and retries have higher ids than what they follow, so
		// every unfinished run counts here, not only those up to upToID.
		rows, err := s.db.QueryContext(ctx, "SELECT id, retry_of, COALESCE(idempotency_key, '') FROM runs WHERE "+s.d.liveRuns()+"owner IN ("+placeholders(len(chunk))+
			") AND state IN ("+placeholders(len(unfinishedRunStates))+")", args...)
		if err != nil {
			return nil, fmt.Errorf("list unfinished runs: %w", err)
		}
		for rows.Next() {
			var id, retryOf int64
			var key string
			if err := rows.Scan(&id, &retryOf, &key); err != nil {
				rows.Close()
				return nil, fmt.Errorf("list unfinished runs: %w", err)
			}
			needed[id] = true
			if retryOf > 0 {
				needed[retryOf] = true
			}
			if parent := ParentRunOfKey(key); parent > 0 {
				needed[parent] = true
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("list unfinished runs: %w", err)
		}
	}
	for _, q := range []string{
		"SELECT id FROM runs WHERE followup = 0 AND id <= ?",
		"SELECT run_id FROM run_reports_pending WHERE run_id <= ?",
	} {
		rows, err := s.db.QueryContext(ctx, q, upToID)
		if err != nil {
			return nil, fmt.Errorf("list runs still needed: %w", err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("list runs still needed: %w", err)
			}
			needed[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("list runs still needed: %w", err)
		}
	}
	return needed, nil
}

// runOwners lists the distinct owners of runs: a loose scan of the first
// column of runs_owner_live (MySQL/MariaDB) or runs_owner_state_time (a
// handful of node ids). PostgreSQL has
// no loose index scan: its GROUP BY reads all of runs (a parallel scan of
// 12 M runs raised the fire lag p99 by half for two seconds at each
// retention cycle, bench/lifecycle -mode bigtable -postgres), so there the
// owners are found one index probe each (the next owner after the last).
func (s *Store) runOwners(ctx context.Context) ([]string, error) {
	q := "SELECT owner FROM runs GROUP BY owner"
	if s.d.name() == "postgres" {
		q = `WITH RECURSIVE o (owner) AS ((SELECT owner FROM runs ORDER BY owner LIMIT 1)
 UNION ALL SELECT (SELECT r.owner FROM runs r WHERE r.owner > o.owner ORDER BY r.owner LIMIT 1) FROM o WHERE o.owner IS NOT NULL)
 SELECT owner FROM o WHERE owner IS NOT NULL`
	}
	rows, err := s.db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("list run owners: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			return nil, fmt.Errorf("list run owners: %w", err)
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// ParentRunKeyPrefix starts the idempotency key of a child run: the parent's
// id follows, so a parent's children are triggered once.
const ParentRunKeyPrefix = "parent-run-"

// ParentRunKey is the idempotency key of the child runs of run id.
func ParentRunKey(id int64) string { return ParentRunKeyPrefix + strconv.FormatInt(id, 10) }

// ParentRunOfKey returns the parent run id of a child's idempotency key, 0
// when the key is not a child's.
func ParentRunOfKey(key string) int64 {
	rest, ok := strings.CutPrefix(key, ParentRunKeyPrefix)
	if !ok {
		return 0
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		return 0
	}
	return id
}

// DeleteAftermath is the database work a deleted row still costs after its
// statement commits, as a multiple of the statement's time: InnoDB's purge
// threads then remove the delete-marked entries of the clustered and every
// secondary index, measured at about as much CPU again as the statement
// (docs/retention.md). SQLite does all of it in the statement.
func (s *Store) DeleteAftermath() float64 {
	return s.d.deleteAftermath()
}

// RunPurgeResult counts what a purge deleted.
type RunPurgeResult struct {
	Runs int64
	Logs int64 // run_logs rows (chunks)
}

// RunPurge deletes the given runs and their logs in one transaction. The
// DELETE itself checks again that each run is final and has no pending
// follow-up, so a run that changed since it was read stays.
func (s *Store) RunPurge(ctx context.Context, ids []int64) (RunPurgeResult, error) {
	var out RunPurgeResult
	if len(ids) == 0 {
		return out, nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return out, fmt.Errorf("purge %d runs: begin: %w", len(ids), err)
	}
	defer tx.Rollback()
	args := int64Args(ids)
	for _, st := range kind.FinalRunStates {
		args = append(args, st)
	}
	res, err := tx.ExecContext(ctx, "DELETE FROM runs WHERE id IN ("+placeholders(len(ids))+") AND state IN ("+placeholders(len(kind.FinalRunStates))+
		") AND (followup IS NULL OR followup <> 0)", args...)
	if err != nil {
		return out, fmt.Errorf("purge %d runs: %w", len(ids), err)
	}
	out.Runs, _ = res.RowsAffected()
	// Logs of the runs that are gone now (a run kept above keeps its log).
	res, err = tx.ExecContext(ctx, "DELETE FROM run_logs WHERE run_id IN ("+placeholders(len(ids))+") AND run_id NOT IN (SELECT id FROM runs WHERE id IN ("+
		placeholders(len(ids))+"))", append(int64Args(ids), int64Args(ids)...)...)
	if err != nil {
		return out, fmt.Errorf("purge logs of %d runs: %w", len(ids), err)
	}
	out.Logs, _ = res.RowsAffected()
	if _, err := tx.ExecContext(ctx, "DELETE FROM run_keys WHERE run_id IN ("+placeholders(len(ids))+") AND run_id NOT IN (SELECT id FROM runs WHERE id IN ("+
		placeholders(len(ids))+"))", append(int64Args(ids), int64Args(ids)...)...); err != nil {
		return out, fmt.Errorf("purge idempotency keys of %d runs: %w", len(ids), err)
	}
	// Delivered failure records go with their runs; one still owed stays
	// until it is delivered (it carries all it needs).
	if _, err := tx.ExecContext(ctx, "DELETE FROM failure_deliveries WHERE delivered_ms > 0 AND run_id IN ("+placeholders(len(ids))+") AND run_id NOT IN (SELECT id FROM runs WHERE id IN ("+
		placeholders(len(ids))+"))", append(int64Args(ids), int64Args(ids)...)...); err != nil {
		return out, fmt.Errorf("purge failure records of %d runs: %w", len(ids), err)
	}
	if err := tx.Commit(); err != nil {
		return out, fmt.Errorf("purge %d runs: commit: %w", len(ids), err)
	}
	return out, nil
}

func int64Args(ids []int64) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

func chunkStrings(s []string, n int) [][]string {
	var out [][]string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	if len(s) > 0 {
		out = append(out, s)
	}
	return out
}

// RunsPresent says which of ids are runs that still exist: the readers of
// jobs.last_run_id (migration 0063) use it to tell a last run that
// retention purged from one they can link to. Key lookups only (on a
// partitioned table one per day partition and id: fine for a page of jobs).
func (s *Store) RunsPresent(ctx context.Context, ids []int64) (map[int64]bool, error) {
	out := make(map[int64]bool, len(ids))
	for _, chunk := range chunkInt64(ids, 1000) {
		rows, err := s.db.QueryContext(ctx, "SELECT id FROM runs WHERE id IN ("+placeholders(len(chunk))+")", int64Args(chunk)...)
		if err != nil {
			return nil, fmt.Errorf("look up %d runs: %w", len(chunk), err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("look up %d runs: %w", len(chunk), err)
			}
			out[id] = true
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("look up %d runs: %w", len(chunk), err)
		}
	}
	return out, nil
}
