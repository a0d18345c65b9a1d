package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/ringjob/ringjob/internal/kind"
)

// FailedStates are the outcomes that get a follow-up (retry, alarm): those
// for which kind.RunState.Retryable holds. Killed runs do not: a kill is a
// decision, not a failure to retry.
var FailedStates = []kind.RunState{kind.RunFailed, kind.RunTimedOut, kind.RunLost}

// RunListRunningSince lists runs still running that were dispatched before
// beforeMs (candidates for the lost-run check).
func (s *Store) RunListRunningSince(ctx context.Context, beforeMs int64, limit int) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+runCols+" FROM runs WHERE "+s.d.liveRuns()+"owner IN (SELECT id FROM nodes) AND state = ? AND dispatched_ms < ? ORDER BY dispatched_ms LIMIT ?",
		kind.RunRunning, beforeMs, limit)
	if err != nil {
		return nil, fmt.Errorf("list running runs: %w", err)
	}
	return collectRuns(rows)
}

// RunListInFlightMany lists, by job id, the runs of the given jobs that are
// being dispatched or are running on a live node and whose fire time is at
// or before dueByMs, in one statement per 1000 jobs. A run is sent only
// once its fire time has come, so the bound leaves out nothing in flight
// when dueByMs is the caller's clock plus the most the replicas' clocks may
// disagree; it keeps the statement from reading the runs planned for the
// next seconds, which share the index range of the in-flight ones on
// MySQL/MariaDB (runs_owner_live).
func (s *Store) RunListInFlightMany(ctx context.Context, jobIDs []int64, dueByMs int64) (map[int64][]Run, error) {
	out := make(map[int64][]Run, len(jobIDs))
	const per = 1000
	for start := 0; start < len(jobIDs); start += per {
		chunk := jobIDs[start:min(start+per, len(jobIDs))]
		args := []any{kind.RunDispatching, kind.RunRunning}
		for _, id := range chunk {
			args = append(args, id)
		}
		args = append(args, dueByMs)
		rows, err := s.db.QueryContext(ctx, "SELECT "+runCols+" FROM runs WHERE "+s.d.liveRuns()+"owner IN (SELECT id FROM nodes) AND state IN (?, ?) AND job_id IN ("+
			placeholders(len(chunk))+") AND scheduled_ms <= ?", args...)
		if err != nil {
			return nil, fmt.Errorf("list running runs of %d jobs: %w", len(chunk), err)
		}
		runs, err := collectRuns(rows)
		if err != nil {
			return nil, fmt.Errorf("list running runs of %d jobs: %w", len(chunk), err)
		}
		for _, r := range runs {
			out[r.JobID] = append(out[r.JobID], r)
		}
	}
	return out, nil
}

// RunSetAlarmStatus records how a run's alarm went.
func (s *Store) RunSetAlarmStatus(ctx context.Context, id int64, status kind.AlarmStatus) error {
	if _, err := s.execRetry(ctx, "UPDATE runs SET alarm_status = ? WHERE id = ?", status, id); err != nil {
		return fmt.Errorf("record alarm status of run %d: %w", id, err)
	}
	return nil
}

// JobSetAlarmState moves a job's alarm state (ok <-> failing) with a
// compare-and-set, so a recovery is announced once.
func (s *Store) JobSetAlarmState(ctx context.Context, id int64, from, to kind.JobAlarmState) (bool, error) {
	res, err := s.execRetry(ctx, "UPDATE jobs SET alarm_state = ? WHERE id = ? AND alarm_state = ?", to, id, from)
	if err != nil {
		return false, fmt.Errorf("set alarm state of job %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// RunGetMany reads runs by id.
func (s *Store) RunGetMany(ctx context.Context, ids []int64) ([]Run, error) {
	var out []Run
	for _, chunk := range chunkInt64(ids, 1000) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		prune, pargs := s.pruneRuns(chunk)
		rows, err := s.db.QueryContext(ctx, "SELECT "+runCols+" FROM runs WHERE id IN ("+placeholders(len(chunk))+")"+prune, append(args, pargs...)...)
		if err != nil {
			return nil, fmt.Errorf("read %d runs: %w", len(chunk), err)
		}
		rs, err := collectRuns(rows)
		if err != nil {
			return nil, err
		}
		rememberRuns(s.hints, rs)
		out = append(out, rs...)
	}
	return out, nil
}

// RunCallbackView is what an executor's callback needs of a run to
// authorize and record its result: a few columns of the row, not its
// parameters, message or history (RunGetMany).
type RunCallbackView struct {
	ID            int64
	JobID         int64
	GroupID       int64
	ScheduledMs   int64
	State         kind.RunState
	Target        string
	KillRequested bool
}

// RunGetForCallback reads runs by id for an executor's callback. Every
// result of every callback is read here, so it reads only the columns
// RunCallbackView holds.
func (s *Store) RunGetForCallback(ctx context.Context, ids []int64) ([]RunCallbackView, error) {
	var out []RunCallbackView
	for _, chunk := range chunkInt64(ids, 1000) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		prune, pargs := s.pruneRuns(chunk)
		rows, err := s.db.QueryContext(ctx, "SELECT id, job_id, group_id, scheduled_ms, state, target, kill_requested FROM runs WHERE id IN ("+
			placeholders(len(chunk))+")"+prune, append(args, pargs...)...)
		if err != nil {
			return nil, fmt.Errorf("read %d runs for a callback: %w", len(chunk), err)
		}
		start := len(out)
		for rows.Next() {
			var r RunCallbackView
			var kill int
			if err := rows.Scan(&r.ID, &r.JobID, &r.GroupID, &r.ScheduledMs, &r.State, &r.Target, &kill); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read %d runs for a callback: %w", len(chunk), err)
			}
			r.KillRequested = kill != 0
			out = append(out, r)
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("read %d runs for a callback: %w", len(chunk), err)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read %d runs for a callback: %w", len(chunk), err)
		}
		rememberRuns(s.hints, out[start:])
	}
	return out, nil
}

func collectRuns(rows interface {
	Next() bool
	Scan(...any) error
	Close() error
	Err() error
}) ([]Run, error) {
	defer rows.Close()
	var out []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("read runs: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// RunRequeue gives a claimed run back for a later dispatch
// (dispatching -> scheduled, compare-and-set on state and owner). It was not
// sent, so its hand-off is undone too.
func (s *Store) RunRequeue(ctx context.Context, id int64, owner string) (bool, error) {
	res, err := s.execRetry(ctx, "UPDATE runs SET state = ?, dispatched_ms = 0, handed_ms = 0 WHERE id = ? AND state = ? AND owner = ?", kind.RunScheduled, id, kind.RunDispatching, owner)
	if err != nil {
		return false, fmt.Errorf("requeue run %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// JobIDsFailing lists the jobs whose failure was alarmed and that have not
// recovered yet.
func (s *Store) JobIDsFailing(ctx context.Context) ([]int64, error) {
	// A constant, not a parameter: on PostgreSQL jobs_alarm_state is a
	// partial index (alarm_state <> 'ok'), which a generic plan of a
	// parameter could not use.
	rows, err := s.db.QueryContext(ctx, "SELECT id FROM jobs WHERE alarm_state = '"+string(kind.JobAlarmFailing)+"'")
	if err != nil {
		return nil, fmt.Errorf("list failing jobs: %w", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// RunLatestFinished reads a job's most recent run that has an outcome
// (succeeded, failed, timed out, lost).
func (s *Store) RunLatestFinished(ctx context.Context, jobID int64) (Run, bool, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+runCols+" FROM runs WHERE job_id = ? AND state IN (?, ?, ?, ?) ORDER BY finished_ms DESC, id DESC LIMIT 1",
		jobID, kind.RunSucceeded, kind.RunFailed, kind.RunTimedOut, kind.RunLost)
	if err != nil {
		return Run{}, false, fmt.Errorf("latest run of job %d: %w", jobID, err)
	}
	rs, err := collectRuns(rows)
	if err != nil || len(rs) == 0 {
		return Run{}, false, err
	}
	return rs[0], true, nil
}

// RunRequestKill records that a run should be stopped, for the replica that
// owns it. It reports whether it changed the run: false when the run is not
// dispatching or running, or (MySQL counts changed rows) its kill was
// requested already.
func (s *Store) RunRequestKill(ctx context.Context, id int64) (bool, error) {
	res, err := s.execRetry(ctx, "UPDATE runs SET kill_requested = 1 WHERE id = ? AND state IN (?, ?)", id, kind.RunDispatching, kind.RunRunning)
	if err != nil {
		return false, fmt.Errorf("request kill of run %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// RunListKillRequested lists an owner's runs that someone asked to kill and
// that are still going (served by index runs_owner_live on MySQL/MariaDB,
// whose kill_requested column keeps this poll from reading the replica's
// other unfinished runs; runs_owner_state_time elsewhere).
func (s *Store) RunListKillRequested(ctx context.Context, owner string) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+runCols+" FROM runs WHERE "+s.d.liveRuns()+"owner = ? AND state IN (?, ?) AND kill_requested = 1",
		owner, kind.RunDispatching, kind.RunRunning)
	if err != nil {
		return nil, fmt.Errorf("list kill requests of node %s: %w", owner, err)
	}
	return collectRuns(rows)
}

// RunFollowupToAlarm turns a failed run's pending follow-up into a pending
// alarm (compare-and-set from pending): the alarm service sends it, from any
// replica. It reports whether this call did.
func (s *Store) RunFollowupToAlarm(ctx context.Context, id int64) (bool, error) {
	res, err := s.execRetry(ctx, "UPDATE runs SET followup = ? WHERE id = ? AND followup = ?", followupAlarm, id, followupPending)
	if err != nil {
		return false, fmt.Errorf("make the alarm of run %d pending: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ErrFollowupBusy: the run still has a follow-up of its own to do (a success
// whose child jobs are not triggered yet); try again later.
var ErrFollowupBusy = errors.New("the run's own follow-up is still pending")

// JobRecoveredAlarm ends a job's failing alarm state with its successful run
// runID and, in the same transaction, makes the run's recovery alarm
// pending (when alarm is set): the job moves back to ok exactly when the
// alarm is owed, so the recovery is announced once, whichever replica sees
// it and whenever one dies. moved is false when another replica moved the
// job first. ErrFollowupBusy: the run's child jobs are still to be
// triggered; nothing changed.
func (s *Store) JobRecoveredAlarm(ctx context.Context, jobID, runID int64, alarm bool) (moved bool, err error) {
	err = s.Tx(ctx, func(tx *Store) error {
		if alarm {
			res, err := tx.db.ExecContext(ctx, "UPDATE runs SET followup = ?, alarm_lease_ms = 0 WHERE id = ? AND (followup IS NULL OR followup = ?)",
				followupAlarm, runID, followupDone)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 0 {
				return ErrFollowupBusy
			}
		}
		res, err := tx.db.ExecContext(ctx, "UPDATE jobs SET alarm_state = ? WHERE id = ? AND alarm_state = ?", kind.JobAlarmOK, jobID, kind.JobAlarmFailing)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return errNotMoved
		}
		moved = true
		return nil
	})
	switch {
	case errors.Is(err, errNotMoved):
		return false, nil
	case errors.Is(err, ErrFollowupBusy):
		return false, err
	case err != nil:
		return false, fmt.Errorf("record the recovery of job %d by run %d: %w", jobID, runID, err)
	}
	return moved, nil
}

var errNotMoved = errors.New("not moved")

// RunListAlarmsDue lists runs whose alarm is pending and not held by a live
// lease, oldest first (index runs_followup).
func (s *Store) RunListAlarmsDue(ctx context.Context, nowMs int64, limit int) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+runCols+" FROM runs WHERE followup = ? AND alarm_lease_ms < ? ORDER BY id LIMIT ?", followupAlarm, nowMs, limit)
	if err != nil {
		return nil, fmt.Errorf("list pending alarms: %w", err)
	}
	return collectRuns(rows)
}

// RunAlarmLease takes the sending of a run's pending alarm until untilMs
// (compare-and-set: pending, and no lease still running at nowMs). Only the
// holder sends it.
func (s *Store) RunAlarmLease(ctx context.Context, id, nowMs, untilMs int64) (bool, error) {
	res, err := s.execRetry(ctx, "UPDATE runs SET alarm_lease_ms = ? WHERE id = ? AND followup = ? AND alarm_lease_ms < ?", untilMs, id, followupAlarm, nowMs)
	if err != nil {
		return false, fmt.Errorf("lease the alarm of run %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// RunAlarmRelease gives a leased alarm back at once (it could not be queued),
// so the next look sends it.
func (s *Store) RunAlarmRelease(ctx context.Context, id int64) error {
	if _, err := s.execRetry(ctx, "UPDATE runs SET alarm_lease_ms = 0 WHERE id = ? AND followup = ?", id, followupAlarm); err != nil {
		return fmt.Errorf("release the alarm of run %d: %w", id, err)
	}
	return nil
}

// RunAlarmDone records a pending alarm's result: the follow-up is done, and
// a failure alarm's status (XXL-JOB's alarm status) is set unless status is
// kind.AlarmNone (a recovery alarm has none). It reports whether the alarm was still pending.
func (s *Store) RunAlarmDone(ctx context.Context, id int64, status kind.AlarmStatus) (bool, error) {
	q, args := "UPDATE runs SET followup = ?", []any{followupDone}
	if status != kind.AlarmNone {
		q, args = q+", alarm_status = ?", append(args, status)
	}
	res, err := s.execRetry(ctx, q+" WHERE id = ? AND followup = ?", append(args, id, followupAlarm)...)
	if err != nil {
		return false, fmt.Errorf("record the alarm of run %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
