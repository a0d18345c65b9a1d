package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/servicekit"
	"github.com/ringjob/ringjob/internal/workflow"
	"github.com/ringjob/ringjob/schedule"
	"github.com/ringjob/ringjob/store"
)

// Audit actions of workflows.
const (
	ActWorkflowCreate      = "workflow.create"
	ActWorkflowUpdate      = "workflow.update"
	ActWorkflowDelete      = "workflow.delete"
	ActWorkflowTrigger     = "workflow.trigger"
	ActWorkflowRunCancel   = "workflow_run.cancel"
	ActWorkflowNodeRetry   = "workflow_run.retry_node"
	ActWorkflowNodeSucceed = "workflow_run.mark_node_succeeded"
)

// WorkflowSpec is what a user gives for a workflow.
type WorkflowSpec struct {
	GroupID       int64
	Name          string
	Description   string
	Definition    workflow.Definition
	TimeoutSec    int
	ScheduleType  string
	ScheduleConf  string
	TimeZone      string
	MisfirePolicy string
	BlockStrategy string
	// ActiveFrom, ActiveUntil: the active window, as a job's (RFC 3339,
	// "" = open).
	ActiveFrom, ActiveUntil string
}

// MaxWorkflowTimeoutSec bounds a workflow run's timeout (a week).
const MaxWorkflowTimeoutSec = 7 * 24 * 3600

// checkWorkflow validates a workflow and returns its store fields and
// schedule. cur is the workflow being updated (nil on create): its nodes'
// jobs need no new right to operate.
func (s *Service) checkWorkflow(ctx context.Context, w WorkflowSpec, cur *store.Workflow) (store.WorkflowFields, schedule.Schedule, error) {
	f := store.WorkflowFields{
		GroupID: w.GroupID, Name: w.Name, Description: w.Description, TimeoutSec: w.TimeoutSec,
		ScheduleType:  strings.ToLower(strings.TrimSpace(w.ScheduleType)),
		ScheduleConf:  strings.TrimSpace(w.ScheduleConf),
		TimeZone:      strings.TrimSpace(w.TimeZone),
		MisfirePolicy: kind.Misfire(strings.ToLower(strings.TrimSpace(w.MisfirePolicy))),
	}
	if f.ScheduleType == "" {
		f.ScheduleType = string(schedule.KindNone)
	}
	if f.TimeZone == "" {
		f.TimeZone = DefaultTimeZone
	}
	if f.MisfirePolicy == "" {
		f.MisfirePolicy = DefaultMisfire
	}
	if err := checkText("name", f.Name, 1, MaxJobName, false); err != nil {
		return f, nil, err
	}
	if strings.TrimSpace(f.Name) == "" {
		return f, nil, invalid("name", "must not be only spaces: give the workflow a name")
	}
	if f.GroupID == 0 {
		return f, nil, invalid("group_id", "is required: the id of the group the workflow belongs to; list groups with GET /api/v1/groups")
	}
	if err := checkID("group_id", f.GroupID); err != nil {
		return f, nil, err
	}
	if _, err := s.st.GroupGet(ctx, f.GroupID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return f, nil, invalid("group_id", "group %d does not exist; create it first (POST /api/v1/groups) or pick one from GET /api/v1/groups", f.GroupID)
		}
		return f, nil, fmt.Errorf("check group %d: %w", f.GroupID, err)
	}
	if f.TimeoutSec < 0 || f.TimeoutSec > MaxWorkflowTimeoutSec {
		return f, nil, invalid("timeout_sec", "must be 0 (none) to %d, got %d", MaxWorkflowTimeoutSec, f.TimeoutSec)
	}
	sched, err := parseSchedule(f.ScheduleType, f.ScheduleConf, f.TimeZone)
	if err != nil {
		return f, nil, err
	}
	window, err := checkJobOptions(JobSpec{ActiveFrom: w.ActiveFrom, ActiveUntil: w.ActiveUntil})
	if err != nil {
		return f, nil, err
	}
	f.ActiveFromMs, f.ActiveUntilMs = window.ActiveFromMs, window.ActiveUntilMs
	if sched != nil {
		sched = schedule.Bound(sched, f.Window())
	}
	if !f.MisfirePolicy.Valid() {
		return f, nil, invalid("misfire_policy", "%q is unknown; use do_nothing (skip missed fires) or fire_once_now (run once at once)", w.MisfirePolicy)
	}
	if f.BlockStrategy, err = kind.ParseBlock(w.BlockStrategy); err != nil {
		return f, nil, invalid("block_strategy", "%q is unknown; use SERIAL_EXECUTION (wait), DISCARD_LATER or COVER_EARLY", w.BlockStrategy)
	}
	for i := range w.Definition.Nodes {
		if r := w.Definition.Nodes[i].StartRule; r != "" {
			if w.Definition.Nodes[i].StartRule, err = kind.ParseStartRule(string(r)); err != nil {
				return f, nil, invalid(fmt.Sprintf("definition.nodes[%d].start_rule", i), "%v", err)
			}
		}
	}
	known := map[int64]bool{}
	if cur != nil {
		var old workflow.Definition
		if json.Unmarshal([]byte(cur.Definition), &old) == nil {
			for _, n := range old.Nodes {
				known[n.JobID] = true
			}
		}
	}
	caller := ActorFrom(ctx).Principal
	var denied error
	err = w.Definition.Validate(func(ids []int64) (map[int64]bool, error) {
		found := map[int64]bool{}
		for _, id := range ids {
			j, err := s.st.JobGet(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			// A job in a group the caller cannot read answers as one that
			// does not exist.
			if caller != nil && !known[id] && !caller.Can(access.PermJobsRead, j.GroupID) {
				continue
			}
			found[id] = true
			// A node runs its job, with the node's params, on the job's
			// group's targets: adding it is triggering it.
			if caller != nil && !known[id] && denied == nil {
				denied = caller.Check(access.PermJobsOperate, j.GroupID)
			}
		}
		return found, nil
	})
	var errs workflow.Errors
	if errors.As(err, &errs) {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = "definition." + e.Error()
		}
		return f, nil, invalid("definition."+errs[0].Field, "%s", strings.Join(msgs, "; "))
	}
	if err != nil {
		return f, nil, err
	}
	if denied != nil {
		return f, nil, denied
	}
	js, err := json.Marshal(w.Definition)
	if err != nil {
		return f, nil, fmt.Errorf("encode the definition: %w", err)
	}
	f.Definition = string(js)
	return f, sched, nil
}

// CreateWorkflow validates and stores a workflow, its schedule started
// when enabled.
func (s *Service) CreateWorkflow(ctx context.Context, w WorkflowSpec, enabled bool) (store.Workflow, error) {
	f, sched, err := s.checkWorkflow(ctx, w, nil)
	if err != nil {
		return store.Workflow{}, err
	}
	now := s.clock.Now()
	var next int64
	if enabled {
		if next, err = firstFire(f.ScheduleType, sched, now); err != nil {
			return store.Workflow{}, err
		}
	}
	var out store.Workflow
	err = s.st.Tx(ctx, func(tx *store.Store) error {
		var err error
		if out, err = tx.WorkflowCreate(ctx, f, enabled, next, now.UnixMilli()); err != nil {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: ActWorkflowCreate, ObjectType: "workflow", ObjectID: out.ID, GroupID: out.GroupID, Changes: diffFields(nil, fieldsOf(out))})
	})
	if errors.Is(err, store.ErrConflict) {
		return store.Workflow{}, &ConflictError{Field: "name", Message: fmt.Sprintf("group %d already has a workflow named %q; pick another name or update that one", f.GroupID, f.Name)}
	}
	if err != nil {
		return store.Workflow{}, fmt.Errorf("create workflow %q: %w", f.Name, err)
	}
	return out, nil
}

// GetWorkflow reads a workflow.
func (s *Service) GetWorkflow(ctx context.Context, id int64) (store.Workflow, error) {
	w, err := s.st.WorkflowGet(ctx, id)
	if err != nil {
		return store.Workflow{}, notFoundOr(err, "workflow", id, fmt.Sprintf("read workflow %d", id))
	}
	return w, nil
}

// WorkflowListParams page a listing of workflows.
type WorkflowListParams struct {
	GroupID    int64   // 0 = all
	OnlyGroups []int64 // nil = all (what the caller may see)
	Cursor     string
	Limit      int
}

// ListWorkflows lists workflows by id.
func (s *Service) ListWorkflows(ctx context.Context, p WorkflowListParams) (Page[store.Workflow], error) {
	limit, err := servicekit.PageLimit(p.Limit)
	if err != nil {
		return Page[store.Workflow]{}, err
	}
	after, err := servicekit.DecodeCursor("workflows", p.Cursor)
	if err != nil {
		return Page[store.Workflow]{}, err
	}
	groups := p.OnlyGroups
	if p.GroupID > 0 {
		if groups != nil && !containsID(groups, p.GroupID) {
			return Page[store.Workflow]{}, nil
		}
		groups = []int64{p.GroupID}
	}
	ws, err := s.st.WorkflowList(ctx, store.WorkflowListParams{GroupIDs: groups, AfterID: after, Limit: limit + 1})
	if err != nil {
		return Page[store.Workflow]{}, err
	}
	out := Page[store.Workflow]{Items: ws}
	if len(ws) > limit {
		out.Items = ws[:limit]
		out.NextCursor = servicekit.EncodeCursor("workflows", ws[limit-1].ID)
	}
	return out, nil
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// UpdateWorkflow replaces a workflow's fields; enabled nil keeps its
// schedule started or stopped. Runs under way keep the definition they
// started with.
func (s *Service) UpdateWorkflow(ctx context.Context, id int64, w WorkflowSpec, enabled *bool, ifVersion int64) (store.Workflow, error) {
	cur, err := s.GetWorkflow(ctx, id)
	if err != nil {
		return store.Workflow{}, err
	}
	if ifVersion != 0 && cur.Version != ifVersion {
		return store.Workflow{}, &PreconditionError{Resource: "workflow", ID: id, Version: cur.Version}
	}
	f, sched, err := s.checkWorkflow(ctx, w, &cur)
	if err != nil {
		return store.Workflow{}, err
	}
	on := cur.Enabled
	if enabled != nil {
		on = *enabled
	}
	now := s.clock.Now()
	var next int64
	if on {
		if next, err = firstFire(f.ScheduleType, sched, now); err != nil {
			return store.Workflow{}, err
		}
	}
	var out store.Workflow
	err = s.st.Tx(ctx, func(tx *store.Store) error {
		var err error
		if out, err = tx.WorkflowUpdate(ctx, id, cur.Version, f, on, next, now.UnixMilli()); err != nil {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: ActWorkflowUpdate, ObjectType: "workflow", ObjectID: id, GroupID: out.GroupID, Changes: diffFields(fieldsOf(cur), fieldsOf(out))})
	})
	switch {
	case errors.Is(err, store.ErrConflict):
		return store.Workflow{}, &ConflictError{Field: "name", Message: fmt.Sprintf("group %d already has a workflow named %q", f.GroupID, f.Name)}
	case errors.Is(err, store.ErrVersionMismatch):
		return store.Workflow{}, &PreconditionError{Resource: "workflow", ID: id}
	case err != nil:
		return store.Workflow{}, notFoundOr(err, "workflow", id, fmt.Sprintf("update workflow %d", id))
	}
	return out, nil
}

// DeleteWorkflow deletes a workflow and its finished runs; refused while a
// run is queued or running.
func (s *Service) DeleteWorkflow(ctx context.Context, id int64) error {
	cur, err := s.GetWorkflow(ctx, id)
	if err != nil {
		return err
	}
	err = s.st.Tx(ctx, func(tx *store.Store) error {
		if err := tx.WorkflowDelete(ctx, id); err != nil {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: ActWorkflowDelete, ObjectType: "workflow", ObjectID: id, GroupID: cur.GroupID, Changes: map[string]any{"name": cur.Name}})
	})
	if errors.Is(err, store.ErrWorkflowActive) {
		return &ConflictError{Message: fmt.Sprintf("workflow %d has runs queued or running; cancel them first (POST /api/v1/workflow-runs/{id}/cancel)", id)}
	}
	return notFoundOr(err, "workflow", id, fmt.Sprintf("delete workflow %d", id))
}

// MaxWorkflowInput bounds a workflow run's input params (JSON bytes).
const MaxWorkflowInput = 64 << 10

// TriggerWorkflow queues a run of a workflow now with input params; the
// workflow engine starts it as the workflow's block strategy allows. A
// repeated idempotency key returns the earlier run with created=false.
func (s *Service) TriggerWorkflow(ctx context.Context, id int64, input map[string]json.RawMessage, key string) (store.WorkflowRun, bool, error) {
	if err := checkIdempotencyKey(key); err != nil {
		return store.WorkflowRun{}, false, err
	}
	w, err := s.GetWorkflow(ctx, id)
	if err != nil {
		return store.WorkflowRun{}, false, err
	}
	if input == nil {
		input = map[string]json.RawMessage{}
	}
	js, err := json.Marshal(input)
	if err != nil {
		return store.WorkflowRun{}, false, invalid("input", "must be a JSON object: %v", err)
	}
	if len(js) > MaxWorkflowInput {
		return store.WorkflowRun{}, false, invalid("input", "is %d bytes of JSON; at most %d", len(js), MaxWorkflowInput)
	}
	var run store.WorkflowRun
	var created bool
	err = s.st.Tx(ctx, func(tx *store.Store) error {
		var err error
		run, created, err = tx.WorkflowRunCreate(ctx, store.WorkflowRunCreateParams{WorkflowID: w.ID, GroupID: w.GroupID, TriggerType: kind.TriggerManual,
			Definition: w.Definition, Input: string(js), IdempotencyKey: key, BlockStrategy: w.BlockStrategy, TimeoutSec: w.TimeoutSec, NowMs: s.nowMs()})
		if err != nil || !created {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: ActWorkflowTrigger, ObjectType: "workflow", ObjectID: w.ID, GroupID: w.GroupID,
			Changes: map[string]any{"workflow_run_id": run.ID, "input": string(js)}})
	})
	if err != nil {
		return store.WorkflowRun{}, false, fmt.Errorf("trigger workflow %d: %w", id, err)
	}
	return run, created, nil
}

// GetWorkflowRun reads a workflow run and every attempt of its nodes.
func (s *Service) GetWorkflowRun(ctx context.Context, id int64) (store.WorkflowRun, []store.NodeRun, error) {
	r, err := s.st.WorkflowRunGet(ctx, id)
	if err != nil {
		return store.WorkflowRun{}, nil, notFoundOr(err, "workflow run", id, fmt.Sprintf("read workflow run %d", id))
	}
	nodes, err := s.st.NodeRunList(ctx, []int64{id})
	if err != nil {
		return store.WorkflowRun{}, nil, err
	}
	return r, nodes, nil
}

// WorkflowRunListParams page a listing of workflow runs, newest first.
type WorkflowRunListParams struct {
	WorkflowID int64
	OnlyGroups []int64 // nil = all
	State      string  // "" = all
	Cursor     string
	Limit      int
}

// ListWorkflowRuns lists workflow runs, newest first.
func (s *Service) ListWorkflowRuns(ctx context.Context, p WorkflowRunListParams) (Page[store.WorkflowRun], error) {
	limit, err := servicekit.PageLimit(p.Limit)
	if err != nil {
		return Page[store.WorkflowRun]{}, err
	}
	before, err := servicekit.DecodeCursor("workflow-runs", p.Cursor)
	if err != nil {
		return Page[store.WorkflowRun]{}, err
	}
	lp := store.WorkflowRunListParams{WorkflowID: p.WorkflowID, GroupIDs: p.OnlyGroups, BeforeID: before, Limit: limit + 1}
	if p.State != "" {
		st := kind.WorkflowRunState(strings.ToLower(strings.TrimSpace(p.State)))
		if !st.Valid() {
			return Page[store.WorkflowRun]{}, invalid("state", "%q is not a workflow run state; use one of %s", p.State, kind.Join(kind.WorkflowRunStates))
		}
		lp.States = []kind.WorkflowRunState{st}
	}
	rs, err := s.st.WorkflowRunList(ctx, lp)
	if err != nil {
		return Page[store.WorkflowRun]{}, err
	}
	out := Page[store.WorkflowRun]{Items: rs}
	if len(rs) > limit {
		out.Items = rs[:limit]
		out.NextCursor = servicekit.EncodeCursor("workflow-runs", rs[limit-1].ID)
	}
	return out, nil
}

// CancelWorkflowRun asks for a workflow run to end cancelled: the engine
// asks its running nodes' runs to stop, starts nothing more and ends it.
func (s *Service) CancelWorkflowRun(ctx context.Context, id int64) (store.WorkflowRun, error) {
	r, err := s.st.WorkflowRunGet(ctx, id)
	if err != nil {
		return store.WorkflowRun{}, notFoundOr(err, "workflow run", id, fmt.Sprintf("cancel workflow run %d", id))
	}
	if r.State.Final() {
		return store.WorkflowRun{}, &ConflictError{Field: "state", Message: fmt.Sprintf("workflow run %d has ended (%s); there is nothing to cancel", id, r.State)}
	}
	err = s.st.Tx(ctx, func(tx *store.Store) error {
		ok, err := tx.WorkflowRunRequestCancel(ctx, id, "cancelled by "+actorName(ctx))
		if err != nil || !ok {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: ActWorkflowRunCancel, ObjectType: "workflow_run", ObjectID: id, GroupID: r.GroupID})
	})
	if err != nil {
		return store.WorkflowRun{}, err
	}
	return s.st.WorkflowRunGet(ctx, id)
}

func actorName(ctx context.Context) string {
	if p := ActorFrom(ctx).Principal; p != nil {
		return p.String()
	}
	return "the system"
}

// RetryWorkflowNode re-runs a failed node of a workflow run (a new
// attempt with the node's retries again) and everything downstream of it;
// with markSucceeded the node is recorded as succeeded instead and the
// nodes skipped because of it are decided again. The run becomes running.
func (s *Service) RetryWorkflowNode(ctx context.Context, id int64, node string, markSucceeded bool) (store.WorkflowRun, error) {
	r, err := s.st.WorkflowRunGet(ctx, id)
	if err != nil {
		return store.WorkflowRun{}, notFoundOr(err, "workflow run", id, fmt.Sprintf("read workflow run %d", id))
	}
	var def workflow.Definition
	if err := json.Unmarshal([]byte(r.Definition), &def); err != nil {
		return store.WorkflowRun{}, fmt.Errorf("read the definition of workflow run %d: %w", id, err)
	}
	g := def.Graph()
	if _, ok := g.Nodes[node]; !ok {
		return store.WorkflowRun{}, invalid("node", "workflow run %d has no node %q; its nodes are %s", id, node, strings.Join(g.Order, ", "))
	}
	var desc []string
	for n := range g.Descendants(node) {
		desc = append(desc, n)
	}
	act, msg := ActWorkflowNodeRetry, "retried by "+actorName(ctx)
	if markSucceeded {
		act, msg = ActWorkflowNodeSucceed, "marked succeeded by "+actorName(ctx)
	}
	err = s.st.Tx(ctx, func(tx *store.Store) error {
		if err := tx.WorkflowRunRetryNode(ctx, id, node, desc, markSucceeded, msg, s.nowMs()); err != nil {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: act, ObjectType: "workflow_run", ObjectID: id, GroupID: r.GroupID, Changes: map[string]any{"node": node}})
	})
	if errors.Is(err, store.ErrNodeNotRetryable) {
		return store.WorkflowRun{}, &ConflictError{Field: "node", Message: fmt.Sprintf("node %s of workflow run %d cannot be retried or marked: %v", node, id, err)}
	}
	if err != nil {
		return store.WorkflowRun{}, err
	}
	return s.st.WorkflowRunGet(ctx, id)
}

// GroupOfWorkflow is the group of a workflow (for authorization).
func (s *Service) GroupOfWorkflow(ctx context.Context, id int64) (int64, error) {
	w, err := s.GetWorkflow(ctx, id)
	return w.GroupID, err
}

// GroupOfWorkflowRun is the group of a workflow run (for authorization).
func (s *Service) GroupOfWorkflowRun(ctx context.Context, id int64) (int64, error) {
	r, err := s.st.WorkflowRunGet(ctx, id)
	if err != nil {
		return 0, notFoundOr(err, "workflow run", id, fmt.Sprintf("read workflow run %d", id))
	}
	return r.GroupID, nil
}
