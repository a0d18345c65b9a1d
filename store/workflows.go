package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/schedule"
)

// WorkflowFields are the user-editable fields of a workflow.
type WorkflowFields struct {
	GroupID     int64
	Name        string
	Description string
	// Definition is the JSON of a workflow.Definition, checked by the
	// service before it is stored.
	Definition    string
	TimeoutSec    int
	ScheduleType  string
	ScheduleConf  string
	TimeZone      string
	MisfirePolicy kind.Misfire
	BlockStrategy kind.Block
	// The active window (0 = open): no scheduled start outside it.
	ActiveFromMs  int64
	ActiveUntilMs int64
}

// Window is the workflow's active window, for schedule.Bound.
func (f WorkflowFields) Window() schedule.Window {
	return JobOptions{ActiveFromMs: f.ActiveFromMs, ActiveUntilMs: f.ActiveUntilMs}.Window("")
}

// Workflow is a stored workflow.
type Workflow struct {
	ID int64
	WorkflowFields
	Enabled    bool
	NextFireMs int64
	Version    int64
	CreatedMs  int64
	UpdatedMs  int64
}

const workflowCols = `id, group_id, name, description, definition, timeout_sec, schedule_type, schedule_conf, time_zone,
 misfire_policy, block_strategy, active_from_ms, active_until_ms, enabled, next_fire_ms, version, created_ms, updated_ms`

func scanWorkflow(r interface{ Scan(...any) error }) (Workflow, error) {
	var w Workflow
	var enabled int
	err := r.Scan(&w.ID, &w.GroupID, &w.Name, &w.Description, &w.Definition, &w.TimeoutSec, &w.ScheduleType, &w.ScheduleConf,
		&w.TimeZone, &w.MisfirePolicy, &w.BlockStrategy, &w.ActiveFromMs, &w.ActiveUntilMs, &enabled, &w.NextFireMs, &w.Version, &w.CreatedMs, &w.UpdatedMs)
	w.Enabled = enabled == 1
	return w, err
}

// WorkflowCreate stores a new workflow; ErrConflict when its group has a
// workflow of that name.
func (s *Store) WorkflowCreate(ctx context.Context, f WorkflowFields, enabled bool, nextFireMs, nowMs int64) (Workflow, error) {
	res, err := s.db.ExecContext(ctx, `INSERT INTO workflows (group_id, name, description, definition, timeout_sec, schedule_type, schedule_conf,
 time_zone, misfire_policy, block_strategy, active_from_ms, active_until_ms, enabled, next_fire_ms, version, created_ms, updated_ms)
 VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,1,?,?)`,
		f.GroupID, f.Name, f.Description, f.Definition, f.TimeoutSec, f.ScheduleType, f.ScheduleConf, f.TimeZone, f.MisfirePolicy, f.BlockStrategy,
		f.ActiveFromMs, f.ActiveUntilMs, boolInt(enabled), nextFireMs, nowMs, nowMs)
	if s.d.isDuplicate(err) {
		return Workflow{}, fmt.Errorf("create workflow %q: the group has a workflow of that name: %w", f.Name, ErrConflict)
	}
	if err != nil {
		return Workflow{}, fmt.Errorf("create workflow %q: %w", f.Name, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return Workflow{}, fmt.Errorf("create workflow %q: %w", f.Name, err)
	}
	return s.WorkflowGet(ctx, id)
}

// WorkflowGet reads a workflow.
func (s *Store) WorkflowGet(ctx context.Context, id int64) (Workflow, error) {
	w, err := scanWorkflow(s.db.QueryRowContext(ctx, "SELECT "+workflowCols+" FROM workflows WHERE id = ?", id))
	if err != nil {
		return Workflow{}, notFound(fmt.Errorf("read workflow %d: %w", id, err), "workflow", id)
	}
	return w, nil
}

// WorkflowListParams select workflows.
type WorkflowListParams struct {
	GroupIDs []int64 // nil: every group
	AfterID  int64
	Limit    int
}

// WorkflowList lists workflows by id.
func (s *Store) WorkflowList(ctx context.Context, p WorkflowListParams) ([]Workflow, error) {
	q, args := "SELECT "+workflowCols+" FROM workflows WHERE id > ?", []any{p.AfterID}
	if p.GroupIDs != nil {
		if len(p.GroupIDs) == 0 {
			return nil, nil
		}
		q += " AND group_id IN (" + placeholders(len(p.GroupIDs)) + ")"
		for _, g := range p.GroupIDs {
			args = append(args, g)
		}
	}
	q += " ORDER BY id LIMIT ?"
	rows, err := s.db.QueryContext(ctx, q, append(args, p.Limit)...)
	if err != nil {
		return nil, fmt.Errorf("list workflows: %w", err)
	}
	defer rows.Close()
	var out []Workflow
	for rows.Next() {
		w, err := scanWorkflow(rows)
		if err != nil {
			return nil, fmt.Errorf("list workflows: %w", err)
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// WorkflowUpdate replaces a workflow's fields (at version ifVersion, any
// when 0) and its schedule state; it bumps the version.
func (s *Store) WorkflowUpdate(ctx context.Context, id, ifVersion int64, f WorkflowFields, enabled bool, nextFireMs, nowMs int64) (Workflow, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE workflows SET group_id = ?, name = ?, description = ?, definition = ?, timeout_sec = ?, schedule_type = ?,
 schedule_conf = ?, time_zone = ?, misfire_policy = ?, block_strategy = ?, active_from_ms = ?, active_until_ms = ?, enabled = ?, next_fire_ms = ?,
 version = version + 1, updated_ms = ?
 WHERE id = ?`+ifVersionCond,
		f.GroupID, f.Name, f.Description, f.Definition, f.TimeoutSec, f.ScheduleType, f.ScheduleConf, f.TimeZone, f.MisfirePolicy, f.BlockStrategy,
		f.ActiveFromMs, f.ActiveUntilMs, boolInt(enabled), nextFireMs, nowMs, id, ifVersion, ifVersion)
	if s.d.isDuplicate(err) {
		return Workflow{}, fmt.Errorf("update workflow %d: the group has a workflow named %q: %w", id, f.Name, ErrConflict)
	}
	if err != nil {
		return Workflow{}, fmt.Errorf("update workflow %d: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return Workflow{}, fmt.Errorf("update workflow %d: %w", id, err)
	} else if n == 0 {
		if err := s.versionMismatchOr(ctx, "workflows", "workflow", id, ifVersion); err != nil {
			return Workflow{}, err
		}
	}
	return s.WorkflowGet(ctx, id)
}

// ErrWorkflowActive refuses to delete a workflow that has runs queued or
// running: cancel them first.
var ErrWorkflowActive = errors.New("the workflow has runs queued or running; cancel them first")

// WorkflowDelete deletes a workflow with its finished runs and their node
// rows (the node's ordinary runs stay in the run history).
func (s *Store) WorkflowDelete(ctx context.Context, id int64) error {
	return s.Tx(ctx, func(tx *Store) error {
		var active int
		if err := tx.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM workflow_runs WHERE workflow_id = ? AND state IN (?, ?)",
			id, kind.WorkflowQueued, kind.WorkflowRunning).Scan(&active); err != nil {
			return fmt.Errorf("delete workflow %d: %w", id, err)
		}
		if active > 0 {
			return fmt.Errorf("delete workflow %d: %w", id, ErrWorkflowActive)
		}
		if _, err := tx.db.ExecContext(ctx, "DELETE FROM workflow_node_runs WHERE workflow_run_id IN (SELECT id FROM workflow_runs WHERE workflow_id = ?)", id); err != nil {
			return fmt.Errorf("delete the node runs of workflow %d: %w", id, err)
		}
		if _, err := tx.db.ExecContext(ctx, "DELETE FROM workflow_runs WHERE workflow_id = ?", id); err != nil {
			return fmt.Errorf("delete the runs of workflow %d: %w", id, err)
		}
		res, err := tx.db.ExecContext(ctx, "DELETE FROM workflows WHERE id = ?", id)
		if err != nil {
			return fmt.Errorf("delete workflow %d: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("workflow %d: %w", id, ErrNotFound)
		}
		return nil
	})
}

// WorkflowListDue lists the enabled workflows whose next fire is at or
// before nowMs.
func (s *Store) WorkflowListDue(ctx context.Context, nowMs int64, limit int) ([]Workflow, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+workflowCols+" FROM workflows WHERE enabled = 1 AND next_fire_ms BETWEEN 1 AND ? ORDER BY next_fire_ms LIMIT ?", nowMs, limit)
	if err != nil {
		return nil, fmt.Errorf("list due workflows: %w", err)
	}
	defer rows.Close()
	var out []Workflow
	for rows.Next() {
		w, err := scanWorkflow(rows)
		if err != nil {
			return nil, fmt.Errorf("list due workflows: %w", err)
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// WorkflowFire records one fire of a workflow's schedule in one
// transaction: the run (when run is not nil; its idempotency key, derived
// from the fire time, makes a repeat find it) and the move of the
// workflow's next fire from fromMs to nextMs (compare-and-set: false when
// another replica fired it first, and then nothing is written).
func (s *Store) WorkflowFire(ctx context.Context, id, fromMs, nextMs int64, run *WorkflowRunCreateParams) (bool, error) {
	fired := false
	err := s.TxRetry(ctx, func(tx *Store) error {
		fired = false
		enabled := 1
		if nextMs == 0 {
			enabled = 0 // the schedule has no more fires
		}
		res, err := tx.db.ExecContext(ctx, "UPDATE workflows SET next_fire_ms = ?, enabled = ? WHERE id = ? AND next_fire_ms = ? AND enabled = 1", nextMs, enabled, id, fromMs)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		if run != nil {
			if _, _, err := tx.WorkflowRunCreate(ctx, *run); err != nil {
				return err
			}
		}
		fired = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("fire workflow %d at %d: %w", id, fromMs, err)
	}
	return fired, nil
}

// WorkflowRun is one run of a workflow.
type WorkflowRun struct {
	ID              int64
	WorkflowID      int64
	GroupID         int64
	State           kind.WorkflowRunState
	TriggerType     kind.Trigger
	Definition      string
	Input           string
	IdempotencyKey  string
	BlockStrategy   kind.Block
	TimeoutSec      int
	StartedMs       int64
	CancelRequested bool
	CreatedMs       int64
	FinishedMs      int64
	Message         string
}

const workflowRunCols = `id, workflow_id, group_id, state, trigger_type, definition, input, idempotency_key, block_strategy, timeout_sec,
 started_ms, cancel_requested, created_ms, finished_ms, message`

func scanWorkflowRun(r interface{ Scan(...any) error }) (WorkflowRun, error) {
	var w WorkflowRun
	var key sql.NullString
	var cancel int
	err := r.Scan(&w.ID, &w.WorkflowID, &w.GroupID, &w.State, &w.TriggerType, &w.Definition, &w.Input, &key, &w.BlockStrategy, &w.TimeoutSec,
		&w.StartedMs, &cancel, &w.CreatedMs, &w.FinishedMs, &w.Message)
	w.IdempotencyKey, w.CancelRequested = key.String, cancel == 1
	return w, err
}

// WorkflowRunCreateParams create a queued workflow run.
type WorkflowRunCreateParams struct {
	WorkflowID     int64
	GroupID        int64
	TriggerType    kind.Trigger
	Definition     string
	Input          string
	IdempotencyKey string // "" = none
	BlockStrategy  kind.Block
	TimeoutSec     int
	NowMs          int64
}

// WorkflowRunCreate creates a queued workflow run; a repeated idempotency
// key for the same workflow returns the earlier run with created=false.
func (s *Store) WorkflowRunCreate(ctx context.Context, p WorkflowRunCreateParams) (WorkflowRun, bool, error) {
	var key any
	if p.IdempotencyKey != "" {
		key = p.IdempotencyKey
	}
	res, err := s.db.ExecContext(ctx, s.d.insertIgnore()+` INTO workflow_runs (workflow_id, group_id, state, trigger_type, definition, input,
 idempotency_key, block_strategy, timeout_sec, created_ms, message) VALUES (?,?,?,?,?,?,?,?,?,?,'')`,
		p.WorkflowID, p.GroupID, kind.WorkflowQueued, p.TriggerType, p.Definition, p.Input, key, p.BlockStrategy, p.TimeoutSec, p.NowMs)
	if err != nil {
		return WorkflowRun{}, false, fmt.Errorf("create a run of workflow %d: %w", p.WorkflowID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 && key != nil {
		w, err := scanWorkflowRun(s.db.QueryRowContext(ctx, "SELECT "+workflowRunCols+" FROM workflow_runs WHERE workflow_id = ? AND idempotency_key = ?", p.WorkflowID, key))
		if err != nil {
			return WorkflowRun{}, false, fmt.Errorf("read the run of workflow %d with idempotency key %q: %w", p.WorkflowID, p.IdempotencyKey, err)
		}
		return w, false, nil
	}
	id, err := res.LastInsertId()
	if err != nil {
		return WorkflowRun{}, false, fmt.Errorf("create a run of workflow %d: %w", p.WorkflowID, err)
	}
	w, err := s.WorkflowRunGet(ctx, id)
	return w, err == nil, err
}

// WorkflowRunGet reads a workflow run.
func (s *Store) WorkflowRunGet(ctx context.Context, id int64) (WorkflowRun, error) {
	w, err := scanWorkflowRun(s.db.QueryRowContext(ctx, "SELECT "+workflowRunCols+" FROM workflow_runs WHERE id = ?", id))
	if err != nil {
		return WorkflowRun{}, notFound(fmt.Errorf("read workflow run %d: %w", id, err), "workflow run", id)
	}
	return w, nil
}

// WorkflowRunListParams select workflow runs, newest first.
type WorkflowRunListParams struct {
	WorkflowID int64                   // 0: any
	GroupIDs   []int64                 // nil: every group
	States     []kind.WorkflowRunState // empty: any
	BeforeID   int64                   // 0: from the newest
	Limit      int
}

// WorkflowRunList lists workflow runs, newest first.
func (s *Store) WorkflowRunList(ctx context.Context, p WorkflowRunListParams) ([]WorkflowRun, error) {
	q, args := "SELECT "+workflowRunCols+" FROM workflow_runs WHERE 1 = 1", []any{}
	if p.WorkflowID > 0 {
		q, args = q+" AND workflow_id = ?", append(args, p.WorkflowID)
	}
	if p.GroupIDs != nil {
		if len(p.GroupIDs) == 0 {
			return nil, nil
		}
		q += " AND group_id IN (" + placeholders(len(p.GroupIDs)) + ")"
		for _, g := range p.GroupIDs {
			args = append(args, g)
		}
	}
	if len(p.States) > 0 {
		q += " AND state IN (" + placeholders(len(p.States)) + ")"
		for _, st := range p.States {
			args = append(args, st)
		}
	}
	if p.BeforeID > 0 {
		q, args = q+" AND id < ?", append(args, p.BeforeID)
	}
	rows, err := s.db.QueryContext(ctx, q+" ORDER BY id DESC LIMIT ?", append(args, p.Limit)...)
	if err != nil {
		return nil, fmt.Errorf("list workflow runs: %w", err)
	}
	defer rows.Close()
	var out []WorkflowRun
	for rows.Next() {
		w, err := scanWorkflowRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list workflow runs: %w", err)
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// WorkflowRunListActive lists the queued and running workflow runs, oldest
// first (index workflow_runs_state): the engine's work.
func (s *Store) WorkflowRunListActive(ctx context.Context, limit int) ([]WorkflowRun, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+workflowRunCols+" FROM workflow_runs WHERE state IN (?, ?) ORDER BY id LIMIT ?",
		kind.WorkflowQueued, kind.WorkflowRunning, limit)
	if err != nil {
		return nil, fmt.Errorf("list active workflow runs: %w", err)
	}
	defer rows.Close()
	var out []WorkflowRun
	for rows.Next() {
		w, err := scanWorkflowRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list active workflow runs: %w", err)
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// WorkflowRunStart moves a queued run to running (compare-and-set).
func (s *Store) WorkflowRunStart(ctx context.Context, id, nowMs int64) (bool, error) {
	return s.casOne(ctx, "start workflow run", id, "UPDATE workflow_runs SET state = ?, started_ms = ? WHERE id = ? AND state = ?",
		kind.WorkflowRunning, nowMs, id, kind.WorkflowQueued)
}

// WorkflowRunFinish gives an active run its final state (compare-and-set
// from queued or running).
func (s *Store) WorkflowRunFinish(ctx context.Context, id int64, state kind.WorkflowRunState, msg string, nowMs int64) (bool, error) {
	return s.casOne(ctx, "finish workflow run", id, "UPDATE workflow_runs SET state = ?, message = ?, finished_ms = ? WHERE id = ? AND state IN (?, ?)",
		state, msg, nowMs, id, kind.WorkflowQueued, kind.WorkflowRunning)
}

// WorkflowRunRequestCancel asks the engine to cancel an active run: it
// stops its running nodes and ends it cancelled. False when the run has
// ended already.
func (s *Store) WorkflowRunRequestCancel(ctx context.Context, id int64, msg string) (bool, error) {
	return s.casOne(ctx, "cancel workflow run", id, "UPDATE workflow_runs SET cancel_requested = 1, message = ? WHERE id = ? AND state IN (?, ?)",
		msg, id, kind.WorkflowQueued, kind.WorkflowRunning)
}

func (s *Store) casOne(ctx context.Context, what string, id int64, q string, args ...any) (bool, error) {
	res, err := s.execRetry(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("%s %d: %w", what, id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// NodeRun is one attempt of one node of a workflow run.
type NodeRun struct {
	ID            int64
	WorkflowRunID int64
	Node          string
	Attempt       int
	// Try counts the attempts of the current series: 1 for an attempt
	// started by its start rule or a user's retry, one more for each
	// automatic retry after it.
	Try   int
	State kind.NodeState
	RunID int64
	// RunIDs are every run of the attempt of a node that fans out (RunID
	// is the first); nil for a node of one run.
	RunIDs     []int64
	Superseded bool
	Output     string
	Message    string
	CreatedMs  int64
	StartedMs  int64
	FinishedMs int64
}

const nodeRunCols = "id, workflow_run_id, node, attempt, try_no, state, run_id, run_ids, superseded, output, message, created_ms, started_ms, finished_ms"

// NodeRunList lists the node rows of workflow runs, by run, node and attempt.
func (s *Store) NodeRunList(ctx context.Context, workflowRunIDs []int64) ([]NodeRun, error) {
	if len(workflowRunIDs) == 0 {
		return nil, nil
	}
	args := make([]any, len(workflowRunIDs))
	for i, id := range workflowRunIDs {
		args[i] = id
	}
	rows, err := s.db.QueryContext(ctx, "SELECT "+nodeRunCols+" FROM workflow_node_runs WHERE workflow_run_id IN ("+placeholders(len(args))+
		") ORDER BY workflow_run_id, node, attempt", args...)
	if err != nil {
		return nil, fmt.Errorf("list node runs of %d workflow runs: %w", len(args), err)
	}
	defer rows.Close()
	var out []NodeRun
	for rows.Next() {
		var n NodeRun
		var sup int
		var ids sql.NullString
		if err := rows.Scan(&n.ID, &n.WorkflowRunID, &n.Node, &n.Attempt, &n.Try, &n.State, &n.RunID, &ids, &sup, &n.Output, &n.Message,
			&n.CreatedMs, &n.StartedMs, &n.FinishedMs); err != nil {
			return nil, fmt.Errorf("list node runs: %w", err)
		}
		n.Superseded = sup == 1
		if ids.Valid && ids.String != "" {
			if err := json.Unmarshal([]byte(ids.String), &n.RunIDs); err != nil {
				return nil, fmt.Errorf("read the runs of node attempt %d: %w", n.ID, err)
			}
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// NodeRunInsert adds an attempt of a node; a row with the same workflow
// run, node and attempt already there (another replica decided it first)
// is left as it is and false returned.
func (s *Store) NodeRunInsert(ctx context.Context, n NodeRun) (bool, error) {
	res, err := s.db.ExecContext(ctx, s.d.insertIgnore()+` INTO workflow_node_runs (workflow_run_id, node, attempt, try_no, state, run_id, output, message,
 created_ms, finished_ms) VALUES (?,?,?,?,?,0,'',?,?,?)`, n.WorkflowRunID, n.Node, n.Attempt, max(n.Try, 1), n.State, n.Message, n.CreatedMs, n.FinishedMs)
	if err != nil {
		return false, fmt.Errorf("add attempt %d of node %s of workflow run %d: %w", n.Attempt, n.Node, n.WorkflowRunID, err)
	}
	k, err := res.RowsAffected()
	return k == 1, err
}

// NodeRunStarted records the runs an attempt started (pending -> running,
// compare-and-set): one run, or every run of a node that fans out.
func (s *Store) NodeRunStarted(ctx context.Context, id int64, runIDs []int64, nowMs int64) (bool, error) {
	var first int64
	var all any
	if len(runIDs) > 0 {
		first = runIDs[0]
	}
	if len(runIDs) != 1 {
		js, err := json.Marshal(runIDs)
		if err != nil {
			return false, err
		}
		all = string(js)
	}
	return s.casOne(ctx, "record the runs of node attempt", id, "UPDATE workflow_node_runs SET state = ?, run_id = ?, run_ids = ?, started_ms = ? WHERE id = ? AND state = ?",
		kind.NodeRunning, first, all, nowMs, id, kind.NodePending)
}

// NodeRunFinish gives an attempt its final state (compare-and-set from
// the state it is seen in).
func (s *Store) NodeRunFinish(ctx context.Context, id int64, from, to kind.NodeState, output, msg string, nowMs int64) (bool, error) {
	return s.casOne(ctx, "finish node attempt", id, "UPDATE workflow_node_runs SET state = ?, output = ?, message = ?, finished_ms = ? WHERE id = ? AND state = ?",
		to, output, msg, nowMs, id, from)
}

// NodeRunFailAndRetry fails an attempt and adds the next one in one
// transaction, so a replica dying between the two leaves neither a failed
// attempt without its retry nor a retry of a running one.
func (s *Store) NodeRunFailAndRetry(ctx context.Context, cur NodeRun, from kind.NodeState, msg string, nowMs int64) (bool, error) {
	done := false
	err := s.TxRetry(ctx, func(tx *Store) error {
		done = false
		ok, err := tx.NodeRunFinish(ctx, cur.ID, from, kind.NodeFailed, "", msg, nowMs)
		if err != nil || !ok {
			return err
		}
		if _, err := tx.NodeRunInsert(ctx, NodeRun{WorkflowRunID: cur.WorkflowRunID, Node: cur.Node, Attempt: cur.Attempt + 1, Try: cur.Try + 1, State: kind.NodePending, CreatedMs: nowMs}); err != nil {
			return err
		}
		done = true
		return nil
	})
	return done, err
}

// ErrNodeNotRetryable: the node's current attempt is not one a user may
// retry or mark succeeded (it did not fail, or the run is still going).
var ErrNodeNotRetryable = errors.New("the node's last attempt did not fail")

// WorkflowRunRetryNode re-runs a failed node of a workflow run that has
// ended: in one transaction the run is running again, the node gets a new
// attempt, and the current attempts of its descendants are superseded so
// that their start rules are decided again. With markSucceeded the failed
// attempt is recorded as succeeded instead (no new attempt), and only the
// descendants that were skipped are decided again.
func (s *Store) WorkflowRunRetryNode(ctx context.Context, runID int64, node string, descendants []string, markSucceeded bool, msg string, nowMs int64) error {
	return s.TxRetry(ctx, func(tx *Store) error {
		rows, err := tx.NodeRunList(ctx, []int64{runID})
		if err != nil {
			return err
		}
		cur := map[string]NodeRun{}
		for _, r := range rows {
			if !r.Superseded {
				cur[r.Node] = r // ordered by attempt: the last one wins
			}
		}
		n, ok := cur[node]
		if !ok || n.State != kind.NodeFailed {
			return fmt.Errorf("node %s of workflow run %d: %w", node, runID, ErrNodeNotRetryable)
		}
		res, err := tx.db.ExecContext(ctx, "UPDATE workflow_runs SET state = ?, finished_ms = 0, cancel_requested = 0, message = ? WHERE id = ? AND state IN (?, ?, ?)",
			kind.WorkflowRunning, msg, runID, kind.WorkflowRunning, kind.WorkflowFailed, kind.WorkflowSucceeded)
		if err != nil {
			return fmt.Errorf("reopen workflow run %d: %w", runID, err)
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return fmt.Errorf("workflow run %d was cancelled or timed out, or is gone: %w", runID, ErrNodeNotRetryable)
		}
		if markSucceeded {
			if _, err := tx.db.ExecContext(ctx, "UPDATE workflow_node_runs SET state = ?, message = ? WHERE id = ? AND state = ?",
				kind.NodeSucceeded, msg, n.ID, kind.NodeFailed); err != nil {
				return fmt.Errorf("mark node %s succeeded: %w", node, err)
			}
		} else if _, err := tx.NodeRunInsert(ctx, NodeRun{WorkflowRunID: runID, Node: node, Attempt: n.Attempt + 1, State: kind.NodePending, Message: msg, CreatedMs: nowMs}); err != nil {
			return err
		}
		for _, d := range descendants {
			r, ok := cur[d]
			if !ok || (markSucceeded && r.State != kind.NodeSkipped) {
				continue
			}
			if r.State == kind.NodePending || r.State == kind.NodeRunning {
				continue // still going (a failure branch): left to end
			}
			if _, err := tx.db.ExecContext(ctx, "UPDATE workflow_node_runs SET superseded = 1 WHERE id = ?", r.ID); err != nil {
				return fmt.Errorf("supersede node %s: %w", d, err)
			}
		}
		return nil
	})
}

// WorkflowUsingJob is a workflow with a node that runs a given job.
type WorkflowUsingJob struct {
	ID      int64
	AppName string // its group's app name
	Name    string
}

// WorkflowsUsingJob lists the workflows with a node that runs job id. The
// definition is JSON, so a LIKE on `"job_id":ID` narrows the rows in SQL and
// the exact match is made here (job 1 is not run by a node of job 12).
func (s *Store) WorkflowsUsingJob(ctx context.Context, id int64) ([]WorkflowUsingJob, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT w.id, COALESCE(g.app_name, ''), w.name, w.definition FROM workflows w
 LEFT JOIN job_groups g ON g.id = w.group_id WHERE w.definition LIKE ? ORDER BY w.id`, fmt.Sprintf(`%%"job_id":%d%%`, id))
	if err != nil {
		return nil, fmt.Errorf("find the workflows that run job %d: %w", id, err)
	}
	defer rows.Close()
	var out []WorkflowUsingJob
	for rows.Next() {
		var w WorkflowUsingJob
		var def string
		if err := rows.Scan(&w.ID, &w.AppName, &w.Name, &def); err != nil {
			return nil, fmt.Errorf("find the workflows that run job %d: %w", id, err)
		}
		var d struct {
			Nodes []struct {
				JobID int64 `json:"job_id"`
			} `json:"nodes"`
		}
		if json.Unmarshal([]byte(def), &d) != nil {
			continue
		}
		for _, n := range d.Nodes {
			if n.JobID == id {
				out = append(out, w)
				break
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find the workflows that run job %d: %w", id, err)
	}
	return out, nil
}
