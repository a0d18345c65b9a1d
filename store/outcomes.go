package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/ringjob/ringjob/internal/kind"
)

// The followup column says what follows a run, so that the follow-up
// services find their work in the database (index runs_followup) and every
// follow-up happens once, whichever replica is alive:
//
//	NULL  nothing pending
//	2     armed at creation: the run's job has child jobs, so a success
//	      becomes pending (the write that records the success moves it to 0)
//	0     pending: a failure to retry or alarm, or a success whose child jobs
//	      are to be triggered; set by the write that records the outcome
//	1     done: set by the follow-up service after it has acted
//	3     alarm pending: a failure with no retry left whose job has alarm
//	      channels, or the success that ends a job's failing state; the
//	      alarm service sends it under a lease (alarm_lease_ms) and moves
//	      it to 1 with the alarm's result
//	4     armed at creation for a misfire: the run's job has a failure
//	      destination, so a misfire becomes pending (for the delivery
//	      service) in the write that records it
//	5     armed for both (2 and 4)
const (
	followupPending      = 0
	followupDone         = 1
	followupArmed        = 2
	followupAlarm        = 3
	followupArmedMisfire = 4
	followupArmedBoth    = 5
	armedForSuccess      = "followup IN (2, 5)"
	armedForMisfire      = "followup IN (4, 5)"
)

// followupAtCreation is a new scheduled run's followup: armed for what
// its job follows up (nil: nothing).
func followupAtCreation(success, misfire bool) any {
	switch {
	case success && misfire:
		return followupArmedBoth
	case success:
		return followupArmed
	case misfire:
		return followupArmedMisfire
	}
	return nil
}

// followupSQL is the value the write that moves a run to state gives its
// followup column: pending for a failure, pending for a success when armed,
// nothing otherwise. It reads only the row's own followup, so it means the
// same whatever order the dialect evaluates SET assignments in.
func followupSQL(state kind.RunState) string {
	switch {
	case isFailed(state):
		return "0"
	case state == kind.RunSucceeded:
		return "CASE WHEN " + armedForSuccess + " THEN 0 ELSE NULL END"
	case state == kind.RunMisfired:
		return "CASE WHEN " + armedForMisfire + " THEN 0 ELSE NULL END"
	}
	return "NULL"
}

// OutcomeSource says who reported an outcome (for the run's log when it
// arrives after the run already ended).
type OutcomeSource string

// Outcome sources.
const (
	SourceCallback OutcomeSource = "executor callback"
	SourceDispatch OutcomeSource = "dispatch"
	SourceTarget   OutcomeSource = "target"
	SourceKill     OutcomeSource = "kill"
	SourceLost     OutcomeSource = "lost-run check"
)

// RunResult is one final outcome reported for a run.
type RunResult struct {
	ID         int64
	State      kind.RunState // a final state
	Code       int
	Message    string
	Target     string // "" keeps the recorded target
	FinishedMs int64
	Source     OutcomeSource
	// JobID is the run's job when the reporter knows it (0: unknown). When
	// every outcome of a write knows its job and applies, the jobs' last
	// outcome is set from these values, without reading the runs again.
	JobID int64
	// OnlyDispatching applies the outcome only to a run still dispatching:
	// a run handed to its target whose answer never came is lost, but one
	// whose target has accepted it meanwhile (running) will report itself.
	OnlyDispatching bool
}

// outcomeCAS is the compare-and-set every outcome is guarded by: a run takes
// its first final outcome while it is dispatching or running.
var outcomeFrom = []kind.RunState{kind.RunDispatching, kind.RunRunning}

// RunRecordOutcomes records final outcomes, many per statement, each as a
// compare-and-set on the run's state: the first final outcome of a run wins.
// It returns, per input, whether that outcome was applied. An outcome that
// was not (the run had already ended, or a second outcome for the same run
// in the batch) is appended to the run's log, never applied.
//
// The common case is one round trip per 500 outcomes: a multi-row UPDATE
// whose affected-row count says every outcome applied. Only when some did
// not are the runs read back to tell which.
func (s *Store) RunRecordOutcomes(ctx context.Context, outs []RunResult) ([]bool, error) {
	applied := make([]bool, len(outs))
	const per = 500
	for start := 0; start < len(outs); start += per {
		end := min(start+per, len(outs))
		if err := s.recordOutcomeChunk(ctx, outs[start:end], applied[start:end]); err != nil {
			return applied, err
		}
	}
	return applied, nil
}

func (s *Store) recordOutcomeChunk(ctx context.Context, outs []RunResult, applied []bool) error {
	// One outcome per run per statement: the first in the batch; the others
	// are late by definition.
	first := make(map[int64]int, len(outs))
	var idx []int
	for i, o := range outs {
		if !o.State.Final() {
			return fmt.Errorf("record outcome of run %d: state %q is not final", o.ID, o.State)
		}
		if _, dup := first[o.ID]; dup {
			continue
		}
		first[o.ID] = i
		idx = append(idx, i)
	}
	n := len(idx)
	ids := make([]int64, n)
	state, target, code, msg, fin := make([]any, n), make([]any, n), make([]any, n), make([]any, n), make([]any, n)
	var failIDs, okIDs, misIDs, dispatchingOnly []int64
	known := true // every outcome knows its job and finish time
	for j, i := range idx {
		o := outs[i]
		known = known && o.JobID > 0 && o.FinishedMs > 0
		ids[j] = o.ID
		state[j], code[j], msg[j], fin[j] = o.State, o.Code, o.Message, o.FinishedMs
		if o.Target != "" {
			target[j] = o.Target
		}
		if o.OnlyDispatching {
			dispatchingOnly = append(dispatchingOnly, o.ID)
		}
		switch {
		case isFailed(o.State):
			failIDs = append(failIDs, o.ID)
		case o.State == kind.RunSucceeded:
			okIDs = append(okIDs, o.ID)
		case o.State == kind.RunMisfired:
			misIDs = append(misIDs, o.ID)
		}
	}
	var q strings.Builder
	q.WriteString("UPDATE runs SET ")
	args := make([]any, 0, 4*n)
	args = setByValue(&q, args, "state", ids, state)
	args = setByValue(&q, args, "target", ids, target)
	args = setByValue(&q, args, "result_code", ids, code)
	args = setByValue(&q, args, "message", ids, msg)
	args = setByValue(&q, args, "finished_ms", ids, fin)
	q.WriteString(", followup = ")
	if len(failIDs)+len(okIDs)+len(misIDs) > 0 {
		q.WriteString("CASE")
	}
	if len(failIDs) > 0 {
		q.WriteString(" WHEN id IN (" + placeholders(len(failIDs)) + ") THEN 0")
		for _, id := range failIDs {
			args = append(args, id)
		}
	}
	if len(okIDs) > 0 {
		q.WriteString(" WHEN " + armedForSuccess + " AND id IN (" + placeholders(len(okIDs)) + ") THEN 0")
		for _, id := range okIDs {
			args = append(args, id)
		}
	}
	if len(misIDs) > 0 {
		q.WriteString(" WHEN " + armedForMisfire + " AND id IN (" + placeholders(len(misIDs)) + ") THEN 0")
		for _, id := range misIDs {
			args = append(args, id)
		}
	}
	if len(failIDs)+len(okIDs)+len(misIDs) > 0 {
		q.WriteString(" ELSE NULL END")
	} else {
		q.WriteString("NULL")
	}
	q.WriteString(" WHERE id IN (" + placeholders(n) + ")")
	for _, id := range ids {
		args = append(args, id)
	}
	if len(dispatchingOnly) == 0 {
		q.WriteString(" AND state IN (?, ?)")
		args = append(args, outcomeFrom[0], outcomeFrom[1])
	} else {
		q.WriteString(" AND (state = ? OR (state = ? AND id NOT IN (" + placeholders(len(dispatchingOnly)) + ")))")
		args = append(args, kind.RunDispatching, kind.RunRunning)
		for _, id := range dispatchingOnly {
			args = append(args, id)
		}
	}
	prune, pargs := s.pruneRuns(ids)
	q.WriteString(prune)
	args = append(args, pargs...)
	var fromValues func(changed int64) (string, []any, bool)
	if known {
		fromValues = func(changed int64) (string, []any, bool) {
			if changed != int64(n) {
				return "", nil, false // some did not apply: the runs say which
			}
			return s.lastOutcomeValuesSQL(outs, idx)
		}
	}
	affected, err := s.execFinal(ctx, false, q.String(), args, ids, prune, pargs, fromValues)
	if err != nil {
		return fmt.Errorf("record %d run outcomes: %w", n, err)
	}
	if int(affected) == n && n == len(outs) {
		for i := range applied {
			applied[i] = true
		}
		return nil
	}
	// Some did not apply: read the runs back and keep, per run, the
	// outcome its row now holds.
	now, err := s.RunGetMany(ctx, ids)
	if err != nil {
		return fmt.Errorf("read back %d run outcomes: %w", n, err)
	}
	byID := make(map[int64]Run, len(now))
	for _, r := range now {
		byID[r.ID] = r
	}
	for _, i := range idx {
		o := outs[i]
		r, ok := byID[o.ID]
		applied[i] = ok && r.State == o.State && r.ResultCode == o.Code && r.Message == o.Message && r.FinishedMs == o.FinishedMs
	}
	for i, o := range outs {
		if applied[i] {
			continue
		}
		r, ok := byID[o.ID]
		if !ok {
			continue // no such run: nothing to log it on
		}
		if err := s.RunLogAppend(ctx, o.ID, lateOutcomeLine(o, r)); err != nil {
			return err
		}
	}
	return nil
}

// execFinal runs q, a write that moves runs ids to final states, and sets
// their jobs' last outcome in the same transaction (again after a lock
// conflict; after a dropped connection too when repeatable). It returns
// the rows q changed. fromValues (nil: none), given the rows q changed,
// may give the last-outcome statement from the outcomes' own values;
// otherwise it is read from the runs (lastOutcomeSQL).
func (s *Store) execFinal(ctx context.Context, repeatable bool, q string, args []any, ids []int64, prune string, pargs []any,
	fromValues func(changed int64) (string, []any, bool)) (int64, error) {
	var changed int64
	err := s.retry(ctx, repeatable, func() error {
		return s.Tx(ctx, func(tx *Store) error {
			res, err := tx.db.ExecContext(ctx, q, args...)
			if err != nil {
				return err
			}
			if changed, err = res.RowsAffected(); err != nil {
				return err
			}
			var jq string
			var jargs []any
			ok := false
			if fromValues != nil {
				jq, jargs, ok = fromValues(changed)
			}
			if !ok {
				jq, jargs = s.lastOutcomeSQL(ids, prune, pargs)
			}
			if _, err := tx.db.ExecContext(ctx, jq, jargs...); err != nil {
				return fmt.Errorf("set the last outcome of their jobs: %w", err)
			}
			return nil
		})
	})
	return changed, err
}

// lastOutcomeSQL is the statement that gives each job of the runs ids its
// last final outcome (jobs.last_outcome, filtered on by the jobs list): the
// outcome of its newest finished run among them, unless the job already
// holds that of a newer run (an older run's late outcome never overwrites a
// newer one's). One statement per batch, primary-key lookups only; a
// repeated outcome touches no index (jobs_outcome holds last_outcome, which
// then does not change).
func (s *Store) lastOutcomeSQL(ids []int64, prune string, pargs []any) (string, []any) {
	finals := []any{kind.RunSucceeded, kind.RunFailed, kind.RunTimedOut, kind.RunKilled, kind.RunLost, kind.RunMisfired}
	args := make([]any, 0, len(ids)+len(finals)+2*len(pargs))
	for _, id := range ids {
		args = append(args, id)
	}
	args = append(args, finals...)
	args = append(args, pargs...)
	newest := "(SELECT job_id, MAX(id) AS run_id FROM runs WHERE id IN (" + placeholders(len(ids)) + ") AND state IN (" +
		placeholders(len(finals)) + ")" + prune + " GROUP BY job_id) m"
	args = append(args, pargs...) // the join to the newest run, pruned the same way
	// A recorded misfire has no finish time: it ended when it was recorded.
	const finished = "CASE WHEN r.finished_ms > 0 THEN r.finished_ms ELSE r.created_ms END"
	if s.d.name() == "mysql" {
		return "UPDATE jobs j JOIN " + newest + " ON m.job_id = j.id JOIN runs r ON r.id = m.run_id" + prune +
			" SET j.last_outcome = r.state, j.last_run_id = r.id, j.last_finished_ms = " + finished + " WHERE r.id > j.last_run_id", args
	}
	return "UPDATE jobs SET last_outcome = r.state, last_run_id = r.id, last_finished_ms = " + finished + " FROM " + newest +
		" JOIN runs r ON r.id = m.run_id" + prune + " WHERE jobs.id = m.job_id AND r.id > jobs.last_run_id", args
}

// lastOutcomeTrailMs is how far a job's last_run_id and last_finished_ms
// may trail its newest finished run when that run ended the same way
// (lastOutcomeValuesSQL). last_outcome itself never trails.
const lastOutcomeTrailMs = 5000

// lastOutcomeValuesSQL is lastOutcomeSQL for outcomes outs[idx] that all
// applied and all know their job and finish time: each job takes the
// outcome of its newest run among them, unless it already holds that of a
// newer run. The values come with the statement (a derived table of
// constants joined to jobs by primary key), so the runs just written are
// not read again. It reports false when the outcomes do not fit in one
// statement.
//
// A job is not rewritten when its recorded last outcome is the same state,
// finished less than lastOutcomeTrailMs before this one, and a later fire
// of the job is already planned (last_fire_ms, written with that fire's
// run, is after this outcome's finish): that run's outcome comes through
// here again and settles the job, and the last run of a job that stops
// firing is written (nothing is planned after it; should the clock of the
// replica that records it be behind, it too may be skipped, still within
// lastOutcomeTrailMs of the run named). So a job that
// fires every second and keeps succeeding is rewritten about once in five
// seconds rather than every second, the last-outcome filter stays exact,
// and only last_run_id and last_finished_ms trail, by less than
// lastOutcomeTrailMs of finish time.
func (s *Store) lastOutcomeValuesSQL(outs []RunResult, idx []int) (string, []any, bool) {
	newest := make(map[int64]int, len(idx)) // job -> index into outs
	order := make([]int64, 0, len(idx))
	for _, i := range idx {
		o := outs[i]
		if j, ok := newest[o.JobID]; !ok {
			order = append(order, o.JobID)
			newest[o.JobID] = i
		} else if o.ID > outs[j].ID {
			newest[o.JobID] = i
		}
	}
	if 4*len(order)+1 > s.d.maxParams() {
		return "", nil, false
	}
	args := make([]any, 0, 4*len(order)+1)
	var v strings.Builder
	pg := s.d.name() == "postgres"
	for k, job := range order {
		o := outs[newest[job]]
		args = append(args, job, o.ID, string(o.State), o.FinishedMs)
		switch {
		case pg && k == 0:
			v.WriteString("(VALUES (?::bigint, ?::bigint, ?::text, ?::bigint)")
		case k == 0:
			v.WriteString("(SELECT ? AS id, ? AS run_id, ? AS state, ? AS finished_ms")
		case k == 1 && !pg:
			v.WriteString(" UNION ALL VALUES (?, ?, ?, ?)")
		default:
			v.WriteString(", (?, ?, ?, ?)")
		}
	}
	v.WriteString(")")
	if pg {
		v.WriteString(" v (id, run_id, state, finished_ms)")
	} else {
		v.WriteString(" v")
	}
	args = append(args, lastOutcomeTrailMs)
	if s.d.name() == "mysql" {
		return "UPDATE jobs j JOIN " + v.String() + " ON j.id = v.id SET j.last_outcome = v.state, j.last_run_id = v.run_id, j.last_finished_ms = v.finished_ms" +
			" WHERE v.run_id > j.last_run_id AND NOT (j.last_outcome = v.state AND v.finished_ms < j.last_finished_ms + ? AND j.last_fire_ms > v.finished_ms)", args, true
	}
	return "UPDATE jobs SET last_outcome = v.state, last_run_id = v.run_id, last_finished_ms = v.finished_ms FROM " + v.String() +
		" WHERE jobs.id = v.id AND v.run_id > jobs.last_run_id AND NOT (jobs.last_outcome = v.state AND v.finished_ms < jobs.last_finished_ms + ? AND jobs.last_fire_ms > v.finished_ms)", args, true
}

// lateOutcomeLine is what the run's log says about an outcome that came
// after the run had ended.
func lateOutcomeLine(o RunResult, r Run) string {
	src := o.Source
	if src == "" {
		src = SourceTarget
	}
	line := fmt.Sprintf("[ringjob] ignored a later outcome from the %s: %s (code %d)", src, o.State, o.Code)
	if m := strings.TrimSpace(o.Message); m != "" {
		line += ": " + strings.ReplaceAll(m, "\n", " ")
	}
	if r.State.Final() {
		line += fmt.Sprintf("; the run had already ended as %s", r.State)
	} else {
		line += fmt.Sprintf("; the run was %s", r.State)
	}
	return line
}

// RunListFollowups lists runs whose follow-up is pending and that ended in
// one of states, oldest first (served by index runs_followup).
func (s *Store) RunListFollowups(ctx context.Context, states []kind.RunState, limit int) ([]Run, error) {
	args := []any{followupPending}
	for _, st := range states {
		args = append(args, st)
	}
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, "SELECT "+runCols+" FROM runs WHERE followup = ? AND state IN ("+placeholders(len(states))+") ORDER BY id LIMIT ?", args...)
	if err != nil {
		return nil, fmt.Errorf("list pending follow-ups: %w", err)
	}
	return collectRuns(rows)
}

// RunFollowupDone marks a run's follow-up done (compare-and-set from
// pending); it reports whether this call did.
func (s *Store) RunFollowupDone(ctx context.Context, id int64) (bool, error) {
	res, err := s.execRetry(ctx, "UPDATE runs SET followup = ? WHERE id = ? AND followup = ?", followupDone, id, followupPending)
	if err != nil {
		return false, fmt.Errorf("mark follow-up of run %d done: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// KilledResult is the outcome of a run whose kill its target accepted:
// killed at once, whatever the target reports afterwards (XXL-JOB's admin
// does the same: the executor's later callback is ignored). Code 500 is
// XXL-JOB's handle code for a run stopped by hand.
func KilledResult(runID, nowMs int64) RunResult {
	return RunResult{ID: runID, State: kind.RunKilled, Code: 500, Message: "killed by request: the target accepted the kill",
		FinishedMs: nowMs, Source: SourceKill}
}
