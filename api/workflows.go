package api

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/ringjob/ringjob/apitypes"
	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/internal/workflow"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
)

// Workflows: DAGs of jobs. Read, write and operate are the jobs'
// permissions on the workflow's group; the workflow runs' are the runs'.
func (s *server) workflowRoutes(v1 routes) {
	v1.post("/workflows", checkedInHandler(access.PermJobsWrite), s.createWorkflow)
	v1.get("/workflows", checkedInHandler(access.PermJobsRead), s.listWorkflows)
	v1.get("/workflows/:id", onWorkflow(access.PermJobsRead), s.getWorkflow)
	v1.put("/workflows/:id", onWorkflow(access.PermJobsWrite), s.updateWorkflow)
	v1.delete("/workflows/:id", onWorkflow(access.PermJobsWrite), s.deleteWorkflow)
	v1.post("/workflows/:id/trigger", onWorkflow(access.PermJobsOperate), s.triggerWorkflow)
	v1.get("/workflow-runs", checkedInHandler(access.PermRunsRead), s.listWorkflowRuns)
	v1.get("/workflow-runs/:id", onWorkflowRun(access.PermRunsRead), s.getWorkflowRun)
	v1.post("/workflow-runs/:id/cancel", onWorkflowRun(access.PermRunsKill), s.cancelWorkflowRun)
	v1.post("/workflow-runs/:id/nodes/:node/retry", onWorkflowRun(access.PermJobsOperate), s.retryWorkflowNode(false))
	v1.post("/workflow-runs/:id/nodes/:node/mark-succeeded", onWorkflowRun(access.PermJobsOperate), s.retryWorkflowNode(true))
}

func (r workflowRequest) spec() service.WorkflowSpec {
	return service.WorkflowSpec{GroupID: r.GroupID, Name: r.Name, Description: r.Description, Definition: r.Definition, TimeoutSec: r.TimeoutSec,
		ScheduleType: r.ScheduleType, ScheduleConf: r.ScheduleConf, TimeZone: r.TimeZone, MisfirePolicy: r.MisfirePolicy, BlockStrategy: r.BlockStrategy,
		ActiveFrom: r.ActiveFrom, ActiveUntil: r.ActiveUntil}
}

// workflowRequest is the body of POST and PUT /api/v1/workflows[/{id}]; the
// read-only fields of a GET are accepted and ignored, so GET-edit-PUT works.
type workflowRequest struct {
	apitypes.WorkflowInput
	ID         int64           `json:"id"`
	NextFireAt json.RawMessage `json:"next_fire_at"`
	CreatedAt  json.RawMessage `json:"created_at"`
	UpdatedAt  json.RawMessage `json:"updated_at"`
}

func (s *server) createWorkflow(c *fiber.Ctx) error {
	var req workflowRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	if req.GroupID > 0 {
		if err := require(c, access.PermJobsWrite, req.GroupID); err != nil {
			return err
		}
	}
	w, err := s.svc.CreateWorkflow(c.UserContext(), req.spec(), req.Enabled != nil && *req.Enabled)
	if err != nil {
		return err
	}
	c.Location("/api/v1/workflows/" + strconv.FormatInt(w.ID, 10))
	c.Set(fiber.HeaderETag, objectETag(w.ID, w.Version))
	return c.Status(fiber.StatusCreated).JSON(viewWorkflow(w))
}

func (s *server) listWorkflows(c *fiber.Ctx) error {
	limit, err := queryInt(c, "limit")
	if err != nil {
		return err
	}
	groupID, err := queryID(c, "group_id")
	if err != nil {
		return err
	}
	if groupID > 0 {
		if err := require(c, access.PermJobsRead, groupID); err != nil {
			return err
		}
	}
	p, err := s.svc.ListWorkflows(c.UserContext(), service.WorkflowListParams{GroupID: groupID, OnlyGroups: visibleGroups(c, access.PermJobsRead),
		Cursor: c.Query("cursor"), Limit: limit})
	if err != nil {
		return err
	}
	return c.JSON(viewPage(p, viewWorkflow))
}

func (s *server) getWorkflow(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	w, err := s.svc.GetWorkflow(c.UserContext(), id)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderETag, objectETag(w.ID, w.Version))
	return c.JSON(viewWorkflow(w))
}

func (s *server) updateWorkflow(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	ifVersion, err := ifMatchVersion(c, "workflow", id)
	if err != nil {
		return err
	}
	var req workflowRequest
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	if req.ID != 0 && req.ID != id {
		return badRequest("id", "is read-only: it is %d in the body but the path names workflow %d", req.ID, id)
	}
	if ifVersion == 0 {
		ifVersion = req.Version
	}
	if req.GroupID > 0 { // moving a workflow needs the permission on its new group too
		if err := require(c, access.PermJobsWrite, req.GroupID); err != nil {
			return err
		}
	}
	w, err := s.svc.UpdateWorkflow(c.UserContext(), id, req.spec(), req.Enabled, ifVersion)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderETag, objectETag(w.ID, w.Version))
	return c.JSON(viewWorkflow(w))
}

func (s *server) deleteWorkflow(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	if err := s.svc.DeleteWorkflow(c.UserContext(), id); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

func (s *server) triggerWorkflow(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var req apitypes.WorkflowTriggerInput
	if err := decodeJSON(c, &req, true); err != nil {
		return err
	}
	r, created, err := s.svc.TriggerWorkflow(c.UserContext(), id, req.Input, c.Get("Idempotency-Key"))
	if err != nil {
		return err
	}
	status := fiber.StatusOK
	if created {
		status = fiber.StatusCreated
	}
	c.Location("/api/v1/workflow-runs/" + strconv.FormatInt(r.ID, 10))
	return c.Status(status).JSON(viewWorkflowRun(r, nil))
}

func (s *server) listWorkflowRuns(c *fiber.Ctx) error {
	limit, err := queryInt(c, "limit")
	if err != nil {
		return err
	}
	wfID, err := queryID(c, "workflow_id")
	if err != nil {
		return err
	}
	if wfID > 0 {
		g, err := s.svc.GroupOfWorkflow(c.UserContext(), wfID)
		if err != nil {
			return err
		}
		if err := require(c, access.PermRunsRead, g); err != nil {
			return err
		}
	}
	p, err := s.svc.ListWorkflowRuns(c.UserContext(), service.WorkflowRunListParams{WorkflowID: wfID, OnlyGroups: visibleGroups(c, access.PermRunsRead),
		State: c.Query("state"), Cursor: c.Query("cursor"), Limit: limit})
	if err != nil {
		return err
	}
	return c.JSON(viewPage(p, func(r store.WorkflowRun) apitypes.WorkflowRun { return viewWorkflowRun(r, nil) }))
}

func (s *server) getWorkflowRun(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	r, nodes, err := s.svc.GetWorkflowRun(c.UserContext(), id)
	if err != nil {
		return err
	}
	return c.JSON(viewWorkflowRun(r, nodes))
}

func (s *server) cancelWorkflowRun(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	r, err := s.svc.CancelWorkflowRun(c.UserContext(), id)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(viewWorkflowRun(r, nil))
}

func (s *server) retryWorkflowNode(mark bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := pathID(c)
		if err != nil {
			return err
		}
		node, err := url.PathUnescape(c.Params("node"))
		if err != nil {
			return badRequest("node", "is not a valid path segment: %v", err)
		}
		r, err := s.svc.RetryWorkflowNode(c.UserContext(), id, node, mark)
		if err != nil {
			return err
		}
		return c.JSON(viewWorkflowRun(r, nil))
	}
}

func viewWorkflow(w store.Workflow) apitypes.Workflow {
	var d workflow.Definition
	_ = json.Unmarshal([]byte(w.Definition), &d)
	window := service.JobOptionsView(store.JobOptions{ActiveFromMs: w.ActiveFromMs, ActiveUntilMs: w.ActiveUntilMs})
	return apitypes.Workflow{ID: w.ID, GroupID: w.GroupID, Name: w.Name, Description: w.Description, Definition: nonNilDefinition(d),
		TimeoutSec: w.TimeoutSec, ScheduleType: w.ScheduleType, ScheduleConf: w.ScheduleConf, TimeZone: w.TimeZone,
		MisfirePolicy: string(w.MisfirePolicy), BlockStrategy: string(w.BlockStrategy), Enabled: w.Enabled, NextFireAt: rfc3339(w.NextFireMs),
		ActiveFrom: window.ActiveFrom, ActiveUntil: window.ActiveUntil,
		Version: w.Version, CreatedAt: rfc3339(w.CreatedMs), UpdatedAt: rfc3339(w.UpdatedMs)}
}

func nonNilDefinition(d workflow.Definition) workflow.Definition {
	if d.Nodes == nil {
		d.Nodes = []workflow.Node{}
	}
	if d.Edges == nil {
		d.Edges = []workflow.Edge{}
	}
	return d
}

func viewWorkflowRun(r store.WorkflowRun, nodes []store.NodeRun) apitypes.WorkflowRun {
	var d workflow.Definition
	_ = json.Unmarshal([]byte(r.Definition), &d)
	v := apitypes.WorkflowRun{ID: r.ID, WorkflowID: r.WorkflowID, GroupID: r.GroupID, State: string(r.State), TriggerType: string(r.TriggerType),
		Input: json.RawMessage(r.Input), IdempotencyKey: r.IdempotencyKey, BlockStrategy: string(r.BlockStrategy), TimeoutSec: r.TimeoutSec,
		CancelRequested: r.CancelRequested, Message: r.Message, CreatedAt: rfc3339(r.CreatedMs), StartedAt: rfc3339(r.StartedMs),
		FinishedAt: rfc3339(r.FinishedMs), Definition: nonNilDefinition(d)}
	if !json.Valid(v.Input) || len(v.Input) == 0 {
		v.Input = json.RawMessage("{}")
	}
	jobs := map[string]int64{}
	for _, n := range d.Nodes {
		jobs[n.Name] = n.JobID
	}
	current := map[string]int{} // node -> index of its current attempt
	for i, n := range nodes {
		if !n.Superseded {
			current[n.Node] = i
		}
	}
	for i, n := range nodes {
		v.Nodes = append(v.Nodes, apitypes.WorkflowNodeRun{Node: n.Node, JobID: jobs[n.Node], Attempt: n.Attempt, State: string(n.State), RunID: n.RunID,
			Current: !n.Superseded && current[n.Node] == i, Output: n.Output, Message: n.Message,
			CreatedAt: rfc3339(n.CreatedMs), StartedAt: rfc3339(n.StartedMs), FinishedAt: rfc3339(n.FinishedMs)})
	}
	return v
}

// groupOfWorkflow finds the group of the workflow or workflow run :id.
func (s *server) groupOfWorkflow(ctx context.Context, sc Scope, id int64) (int64, bool, error) {
	var g int64
	var err error
	if sc == ScopeWorkflow {
		g, err = s.svc.GroupOfWorkflow(ctx, id)
	} else {
		g, err = s.svc.GroupOfWorkflowRun(ctx, id)
	}
	return g, err == nil, ignoreNotFound(err)
}
