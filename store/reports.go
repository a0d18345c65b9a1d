package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ringjob/ringjob/internal/kind"
)

// Report resolutions: the bucket sizes of run_reports.
const (
	ReportMinute = "m"
	ReportHour   = "h"
)

// ReportRow is one bucket of run_reports: the runs of a job (GroupID and
// JobID set), of a group (JobID 0) or of everything (both 0) whose scheduled
// time falls in [BucketMs, BucketMs + resolution), by outcome.
type ReportRow struct {
	Resolution    string
	GroupID       int64
	JobID         int64
	BucketMs      int64
	Succeeded     int64
	Failed        int64
	TimedOut      int64
	Killed        int64
	Lost          int64
	Misfired      int64
	DurationSumMs int64 // finished - dispatched, summed over the runs that ran
	DurationMaxMs int64
}

// Add counts one final run into the row.
func (r *ReportRow) Add(state kind.RunState, durationMs int64) {
	switch state {
	case kind.RunSucceeded:
		r.Succeeded++
	case kind.RunFailed:
		r.Failed++
	case kind.RunTimedOut:
		r.TimedOut++
	case kind.RunKilled:
		r.Killed++
	case kind.RunLost:
		r.Lost++
	case kind.RunMisfired:
		r.Misfired++
	}
	if durationMs > 0 {
		r.DurationSumMs += durationMs
		r.DurationMaxMs = max(r.DurationMaxMs, durationMs)
	}
}

// RunOutcome is what the report roll-up reads of a run.
type RunOutcome struct {
	ID           int64
	JobID        int64
	GroupID      int64
	State        kind.RunState
	ScheduledMs  int64
	CreatedMs    int64
	DispatchedMs int64
	FinishedMs   int64
}

// DurationMs is how long the run ran (0 when it never started).
func (o RunOutcome) DurationMs() int64 {
	if o.DispatchedMs <= 0 || o.FinishedMs < o.DispatchedMs {
		return 0
	}
	return o.FinishedMs - o.DispatchedMs
}

const runOutcomeCols = "id, job_id, group_id, state, scheduled_ms, created_ms, dispatched_ms, finished_ms"

func collectRunOutcomes(rows *sql.Rows) ([]RunOutcome, error) {
	defer rows.Close()
	var out []RunOutcome
	for rows.Next() {
		var o RunOutcome
		if err := rows.Scan(&o.ID, &o.JobID, &o.GroupID, &o.State, &o.ScheduledMs, &o.CreatedMs, &o.DispatchedMs, &o.FinishedMs); err != nil {
			return nil, fmt.Errorf("read run outcomes: %w", err)
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// RunOutcomesAfter reads up to limit runs with id > afterID in id order.
func (s *Store) RunOutcomesAfter(ctx context.Context, afterID int64, limit int) ([]RunOutcome, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+runOutcomeCols+" FROM runs WHERE id > ? ORDER BY id LIMIT ?", afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("read runs after id %d: %w", afterID, err)
	}
	return collectRunOutcomes(rows)
}

// RunOutcomesByID reads the given runs (missing ones are left out).
func (s *Store) RunOutcomesByID(ctx context.Context, ids []int64) ([]RunOutcome, error) {
	var out []RunOutcome
	for _, chunk := range chunkInt64(ids, 1000) {
		rows, err := s.db.QueryContext(ctx, "SELECT "+runOutcomeCols+" FROM runs WHERE id IN ("+placeholders(len(chunk))+")", int64Args(chunk)...)
		if err != nil {
			return nil, fmt.Errorf("read %d runs: %w", len(chunk), err)
		}
		os, err := collectRunOutcomes(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, os...)
	}
	return out, nil
}

// ReportMark is how far the roll-up has counted: every run with id <=
// RunID is counted or in run_reports_pending. Seq changes with every roll-up,
// so two replicas can never apply the same step twice.
type ReportMark struct {
	RunID int64
	Seq   int64
	AtMs  int64 // when the roll-up last moved
}

const reportMarkSetting = "reports.rollup"

func (m ReportMark) String() string {
	return strconv.FormatInt(m.RunID, 10) + "/" + strconv.FormatInt(m.Seq, 10) + "/" + strconv.FormatInt(m.AtMs, 10)
}

func parseReportMark(v string) (ReportMark, error) {
	parts := strings.Split(v, "/")
	if len(parts) != 3 {
		return ReportMark{}, fmt.Errorf("report mark %q: want RUNID/SEQ/ATMS", v)
	}
	var m ReportMark
	var err error
	if m.RunID, err = strconv.ParseInt(parts[0], 10, 64); err != nil {
		return m, fmt.Errorf("report mark %q: %w", v, err)
	}
	if m.Seq, err = strconv.ParseInt(parts[1], 10, 64); err != nil {
		return m, fmt.Errorf("report mark %q: %w", v, err)
	}
	if m.AtMs, err = strconv.ParseInt(parts[2], 10, 64); err != nil {
		return m, fmt.Errorf("report mark %q: %w", v, err)
	}
	return m, nil
}

// ReportMarkGet reads the roll-up's watermark (zero before the first roll-up).
func (s *Store) ReportMarkGet(ctx context.Context) (ReportMark, error) {
	v, ok, err := s.SettingGet(ctx, reportMarkSetting)
	if err != nil || !ok {
		return ReportMark{}, err
	}
	return parseReportMark(v)
}

// ReportPendingList lists up to limit runs the roll-up passed before they were final.
func (s *Store) ReportPendingList(ctx context.Context, limit int) ([]int64, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT run_id FROM run_reports_pending ORDER BY run_id LIMIT ?", limit)
	if err != nil {
		return nil, fmt.Errorf("list runs pending a report: %w", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("list runs pending a report: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// ReportApplyParams are one step of the roll-up.
type ReportApplyParams struct {
	From        ReportMark  // the mark the step started from
	To          ReportMark  // the new mark (its Seq must differ from From's)
	Rows        []ReportRow // counts to add
	AddPending  []int64     // runs passed while not final
	DonePending []int64     // pending runs now counted (or gone)
}

// ErrReportMarkMoved says another replica moved the roll-up meanwhile; the
// step was not applied.
var ErrReportMarkMoved = errors.New("the report roll-up moved meanwhile")

// ReportApply adds a roll-up step in one transaction: it moves the mark
// From -> To with a compare-and-set (ErrReportMarkMoved if it moved), adds
// the counts and updates the pending runs. Each run is thus counted exactly
// once, even when two replicas race or one dies mid-step.
func (s *Store) ReportApply(ctx context.Context, p ReportApplyParams) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("apply report roll-up: begin: %w", err)
	}
	defer tx.Rollback()
	var res sql.Result
	if p.From == (ReportMark{}) {
		res, err = tx.ExecContext(ctx, s.d.insertIgnore()+" INTO settings (name, value, updated_ms) VALUES (?, ?, ?)", reportMarkSetting, p.To.String(), p.To.AtMs)
	} else {
		res, err = tx.ExecContext(ctx, "UPDATE settings SET value = ?, updated_ms = ? WHERE name = ? AND value = ?", p.To.String(), p.To.AtMs, reportMarkSetting, p.From.String())
	}
	if err != nil {
		return fmt.Errorf("apply report roll-up: move mark: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return ErrReportMarkMoved
	}
	const cols = 12
	for start := 0; start < len(p.Rows); start += 400 {
		chunk := p.Rows[start:min(start+400, len(p.Rows))]
		args := make([]any, 0, cols*len(chunk))
		vals := make([]string, len(chunk))
		for i, r := range chunk {
			vals[i] = "(" + placeholders(cols) + ")"
			args = append(args, r.Resolution, r.GroupID, r.JobID, r.BucketMs, r.Succeeded, r.Failed, r.TimedOut, r.Killed, r.Lost, r.Misfired, r.DurationSumMs, r.DurationMaxMs)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO run_reports (resolution, group_id, job_id, bucket_ms, succeeded, failed, timed_out, killed, lost, misfired, duration_sum_ms, duration_max_ms) VALUES "+
			strings.Join(vals, ",")+s.d.reportUpsert(), args...); err != nil {
			return fmt.Errorf("apply report roll-up: add %d buckets: %w", len(chunk), err)
		}
	}
	for _, chunk := range chunkInt64(p.AddPending, 1000) {
		vals := strings.TrimSuffix(strings.Repeat("(?),", len(chunk)), ",")
		if _, err := tx.ExecContext(ctx, s.d.insertIgnore()+" INTO run_reports_pending (run_id) VALUES "+vals, int64Args(chunk)...); err != nil {
			return fmt.Errorf("apply report roll-up: record %d pending runs: %w", len(chunk), err)
		}
	}
	for _, chunk := range chunkInt64(p.DonePending, 1000) {
		if _, err := tx.ExecContext(ctx, "DELETE FROM run_reports_pending WHERE run_id IN ("+placeholders(len(chunk))+")", int64Args(chunk)...); err != nil {
			return fmt.Errorf("apply report roll-up: clear %d pending runs: %w", len(chunk), err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("apply report roll-up: commit: %w", err)
	}
	return nil
}

// ReportQueryParams select the buckets of one job, one group or everything.
type ReportQueryParams struct {
	Resolution string
	GroupID    int64 // 0 with JobID 0 = all runs
	JobID      int64 // needs its GroupID
	FromMs     int64 // bucket_ms >= FromMs
	ToMs       int64 // bucket_ms < ToMs
}

// ReportQuery reads buckets in time order (a primary-key range).
func (s *Store) ReportQuery(ctx context.Context, p ReportQueryParams) ([]ReportRow, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT resolution, group_id, job_id, bucket_ms, succeeded, failed, timed_out, killed, lost, misfired, duration_sum_ms, duration_max_ms
 FROM run_reports WHERE resolution = ? AND group_id = ? AND job_id = ? AND bucket_ms >= ? AND bucket_ms < ? ORDER BY bucket_ms`,
		p.Resolution, p.GroupID, p.JobID, p.FromMs, p.ToMs)
	if err != nil {
		return nil, fmt.Errorf("read run reports: %w", err)
	}
	defer rows.Close()
	var out []ReportRow
	for rows.Next() {
		var r ReportRow
		if err := rows.Scan(&r.Resolution, &r.GroupID, &r.JobID, &r.BucketMs, &r.Succeeded, &r.Failed, &r.TimedOut, &r.Killed, &r.Lost, &r.Misfired,
			&r.DurationSumMs, &r.DurationMaxMs); err != nil {
			return nil, fmt.Errorf("read run reports: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// ReportPurgeOldest deletes the oldest bucket of a resolution if it starts
// before beforeMs (one bucket per statement: its rows are at most one per
// job that ran in it), and reports the rows deleted and whether a bucket was
// old enough.
func (s *Store) ReportPurgeOldest(ctx context.Context, resolution string, beforeMs int64) (int64, bool, error) {
	var oldest sql.NullInt64
	if err := s.db.QueryRowContext(ctx, "SELECT MIN(bucket_ms) FROM run_reports WHERE resolution = ?", resolution).Scan(&oldest); err != nil {
		return 0, false, fmt.Errorf("find the oldest report bucket: %w", err)
	}
	if !oldest.Valid || oldest.Int64 >= beforeMs {
		return 0, false, nil
	}
	res, err := s.execRetry(ctx, "DELETE FROM run_reports WHERE resolution = ? AND bucket_ms = ?", resolution, oldest.Int64)
	if err != nil {
		return 0, false, fmt.Errorf("purge report bucket %d: %w", oldest.Int64, err)
	}
	n, _ := res.RowsAffected()
	return n, true, nil
}
