package apitypes

import (
	"encoding/json"

	"github.com/ringjob/ringjob/internal/workflow"
)

// The definition of a workflow: nodes (each a job with optional params,
// retries, timeout and start rule) and the edges between them. Declared
// once, in internal/workflow, which validates and evaluates it.
type (
	WorkflowDefinition = workflow.Definition
	WorkflowNode       = workflow.Node
	WorkflowEdge       = workflow.Edge
)

// WorkflowInput is the body of POST /api/v1/workflows and PUT
// /api/v1/workflows/{id}.
type WorkflowInput struct {
	GroupID     int64              `json:"group_id"`
	Name        string             `json:"name"`
	Description string             `json:"description"`
	Definition  WorkflowDefinition `json:"definition"`
	// TimeoutSec ends a run still going after this long timed_out (0: none).
	TimeoutSec int `json:"timeout_sec"`
	// The schedule, as a job's: none, cron, fixed_rate or at.
	ScheduleType  string `json:"schedule_type"`
	ScheduleConf  string `json:"schedule_conf"`
	TimeZone      string `json:"time_zone"`
	MisfirePolicy string `json:"misfire_policy"`
	// BlockStrategy is what a new run does while another run of the
	// workflow is running: SERIAL_EXECUTION (waits), DISCARD_LATER (is
	// cancelled) or COVER_EARLY (cancels the running one).
	BlockStrategy string `json:"block_strategy"`
	// ActiveFrom and ActiveUntil bound the schedule, as a job's: RFC 3339
	// instants, "" = open; no scheduled start outside them.
	ActiveFrom  string `json:"active_from,omitempty"`
	ActiveUntil string `json:"active_until,omitempty"`
	// Enabled starts the schedule (nil on update: unchanged).
	Enabled *bool `json:"enabled"`
	// Version, when set on update, must be the workflow's current one.
	Version int64 `json:"version,omitempty"`
}

// Workflow is a stored workflow (GET /api/v1/workflows/{id}).
type Workflow struct {
	ID            int64              `json:"id"`
	GroupID       int64              `json:"group_id"`
	Name          string             `json:"name"`
	Description   string             `json:"description"`
	Definition    WorkflowDefinition `json:"definition"`
	TimeoutSec    int                `json:"timeout_sec"`
	ScheduleType  string             `json:"schedule_type"`
	ScheduleConf  string             `json:"schedule_conf"`
	TimeZone      string             `json:"time_zone"`
	MisfirePolicy string             `json:"misfire_policy"`
	BlockStrategy string             `json:"block_strategy"`
	ActiveFrom    string             `json:"active_from,omitempty"`
	ActiveUntil   string             `json:"active_until,omitempty"`
	Enabled       bool               `json:"enabled"`
	NextFireAt    *string            `json:"next_fire_at"`
	Version       int64              `json:"version"`
	CreatedAt     *string            `json:"created_at"`
	UpdatedAt     *string            `json:"updated_at"`
}

// WorkflowTriggerInput is the optional body of POST
// /api/v1/workflows/{id}/trigger.
type WorkflowTriggerInput struct {
	// Input are the run's input params, read by node params as
	// {{ input.KEY }}.
	Input map[string]json.RawMessage `json:"input"`
}

// WorkflowRun is one run of a workflow with its nodes (GET
// /api/v1/workflow-runs/{id}).
type WorkflowRun struct {
	ID              int64           `json:"id"`
	WorkflowID      int64           `json:"workflow_id"`
	GroupID         int64           `json:"group_id"`
	State           string          `json:"state"`
	TriggerType     string          `json:"trigger_type"`
	Input           json.RawMessage `json:"input"`
	IdempotencyKey  string          `json:"idempotency_key,omitempty"`
	BlockStrategy   string          `json:"block_strategy"`
	TimeoutSec      int             `json:"timeout_sec"`
	CancelRequested bool            `json:"cancel_requested"`
	Message         string          `json:"message"`
	CreatedAt       *string         `json:"created_at"`
	StartedAt       *string         `json:"started_at"`
	FinishedAt      *string         `json:"finished_at"`
	// Definition is the definition the run started with.
	Definition WorkflowDefinition `json:"definition"`
	// Nodes are the attempts of the run's nodes, by node and attempt
	// (only on GET of one run).
	Nodes []WorkflowNodeRun `json:"nodes,omitempty"`
}

// Final tells whether the workflow run has ended.
func (r WorkflowRun) Final() bool {
	switch r.State {
	case "succeeded", "failed", "cancelled", "timed_out":
		return true
	}
	return false
}

// WorkflowNodeRun is one attempt of one node of a workflow run.
type WorkflowNodeRun struct {
	Node    string `json:"node"`
	JobID   int64  `json:"job_id"`
	Attempt int    `json:"attempt"`
	State   string `json:"state"`
	// RunID is the job run of the attempt (0: none yet, or skipped).
	RunID int64 `json:"run_id"`
	// Current is false for an attempt that a later one replaced (an
	// automatic or a user's retry, a re-run after a parent's retry).
	Current    bool    `json:"current"`
	Output     string  `json:"output"`
	Message    string  `json:"message"`
	CreatedAt  *string `json:"created_at"`
	StartedAt  *string `json:"started_at"`
	FinishedAt *string `json:"finished_at"`
}
