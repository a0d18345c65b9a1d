package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/ringjob/ringjob/apitypes"
)

// Workflows: DAGs of jobs (docs/workflows.md).
type (
	Workflow             = apitypes.Workflow
	WorkflowInput        = apitypes.WorkflowInput
	WorkflowDefinition   = apitypes.WorkflowDefinition
	WorkflowNode         = apitypes.WorkflowNode
	WorkflowEdge         = apitypes.WorkflowEdge
	WorkflowRun          = apitypes.WorkflowRun
	WorkflowNodeRun      = apitypes.WorkflowNodeRun
	WorkflowTriggerInput = apitypes.WorkflowTriggerInput
)

// CreateWorkflow creates a workflow.
func (c *Client) CreateWorkflow(ctx context.Context, in WorkflowInput) (Workflow, error) {
	var w Workflow
	_, err := c.do(ctx, http.MethodPost, "/api/v1/workflows", nil, in, &w)
	return w, err
}

// GetWorkflow reads a workflow.
func (c *Client) GetWorkflow(ctx context.Context, workflowID int64) (Workflow, error) {
	var w Workflow
	_, err := c.do(ctx, http.MethodGet, "/api/v1/workflows/"+id(workflowID), nil, nil, &w)
	return w, err
}

// ListWorkflows lists one page of workflows; filter group_id.
func (c *Client) ListWorkflows(ctx context.Context, o ListOptions) (Page[Workflow], error) {
	var p Page[Workflow]
	_, err := c.do(ctx, http.MethodGet, "/api/v1/workflows"+o.query(), nil, nil, &p)
	return p, err
}

// UpdateWorkflow replaces a workflow's fields (in.Version, when set, must
// be its current version).
func (c *Client) UpdateWorkflow(ctx context.Context, workflowID int64, in WorkflowInput) (Workflow, error) {
	var w Workflow
	_, err := c.do(ctx, http.MethodPut, "/api/v1/workflows/"+id(workflowID), nil, in, &w)
	return w, err
}

// DeleteWorkflow deletes a workflow and its finished runs.
func (c *Client) DeleteWorkflow(ctx context.Context, workflowID int64) error {
	_, err := c.do(ctx, http.MethodDelete, "/api/v1/workflows/"+id(workflowID), nil, nil, nil)
	return err
}

// TriggerWorkflow queues a run of a workflow with input params; a key the
// workflow has seen returns the earlier run.
func (c *Client) TriggerWorkflow(ctx context.Context, workflowID int64, input map[string]json.RawMessage, idempotencyKey string) (WorkflowRun, error) {
	var r WorkflowRun
	_, err := c.do(ctx, http.MethodPost, "/api/v1/workflows/"+id(workflowID)+"/trigger", map[string]string{"Idempotency-Key": idempotencyKey},
		WorkflowTriggerInput{Input: input}, &r)
	return r, err
}

// ListWorkflowRuns lists one page of workflow runs, newest first; filters
// workflow_id, state.
func (c *Client) ListWorkflowRuns(ctx context.Context, o ListOptions) (Page[WorkflowRun], error) {
	var p Page[WorkflowRun]
	_, err := c.do(ctx, http.MethodGet, "/api/v1/workflow-runs"+o.query(), nil, nil, &p)
	return p, err
}

// GetWorkflowRun reads a workflow run with every attempt of its nodes.
func (c *Client) GetWorkflowRun(ctx context.Context, runID int64) (WorkflowRun, error) {
	var r WorkflowRun
	_, err := c.do(ctx, http.MethodGet, "/api/v1/workflow-runs/"+id(runID), nil, nil, &r)
	return r, err
}

// CancelWorkflowRun asks for a workflow run to end cancelled.
func (c *Client) CancelWorkflowRun(ctx context.Context, runID int64) (WorkflowRun, error) {
	var r WorkflowRun
	_, err := c.do(ctx, http.MethodPost, "/api/v1/workflow-runs/"+id(runID)+"/cancel", nil, nil, &r)
	return r, err
}

// RetryWorkflowNode runs a failed node again, and what depends on it.
func (c *Client) RetryWorkflowNode(ctx context.Context, runID int64, node string) (WorkflowRun, error) {
	var r WorkflowRun
	_, err := c.do(ctx, http.MethodPost, "/api/v1/workflow-runs/"+id(runID)+"/nodes/"+url.PathEscape(node)+"/retry", nil, nil, &r)
	return r, err
}

// MarkWorkflowNodeSucceeded records a failed node as succeeded.
func (c *Client) MarkWorkflowNodeSucceeded(ctx context.Context, runID int64, node string) (WorkflowRun, error) {
	var r WorkflowRun
	_, err := c.do(ctx, http.MethodPost, "/api/v1/workflow-runs/"+id(runID)+"/nodes/"+url.PathEscape(node)+"/mark-succeeded", nil, nil, &r)
	return r, err
}

// GetWorkflowByName finds a workflow by its group's app name and its name
// (the same APP/NAME form as a job's).
func (c *Client) GetWorkflowByName(ctx context.Context, ref JobRef) (Workflow, error) {
	g, err := c.GetGroupByAppName(ctx, ref.AppName)
	if err != nil {
		return Workflow{}, err
	}
	o := ListOptions{Limit: 200, Filters: map[string]string{"group_id": id(g.ID)}}
	for {
		page, err := c.ListWorkflows(ctx, o)
		if err != nil {
			return Workflow{}, err
		}
		for _, w := range page.Items {
			if w.Name == ref.Name {
				return w, nil
			}
		}
		if page.NextCursor == "" {
			return Workflow{}, &Error{Status: http.StatusNotFound, Code: "not_found",
				Message: fmt.Sprintf("group %s has no workflow named %q", ref.AppName, ref.Name)}
		}
		o.Cursor = page.NextCursor
	}
}
