package apitypes

import (
	"encoding/json"

	"github.com/ringjob/ringjob/internal/kind"
)

// Run is one run of a job (GET /api/v1/runs/{id}).
type Run struct {
	ID    int64 `json:"id"`
	JobID int64 `json:"job_id"`
	// JobName and AppName name the job (app_name/job_name); empty when the
	// job is gone.
	JobName        string  `json:"job_name"`
	AppName        string  `json:"app_name"`
	GroupID        int64   `json:"group_id"`
	State          string  `json:"state"`
	TriggerType    string  `json:"trigger_type"`
	ScheduledAt    *string `json:"scheduled_at"`
	DispatchedAt   *string `json:"dispatched_at"`
	FinishedAt     *string `json:"finished_at"`
	CreatedAt      *string `json:"created_at"`
	ShardIndex     int     `json:"shard_index"`
	ShardTotal     int     `json:"shard_total"`
	Attempt        int     `json:"attempt"`
	Target         string  `json:"target"`
	Handler        string  `json:"handler"`
	Params         string  `json:"params"`
	Node           string  `json:"node"`
	Late           bool    `json:"late"`
	ResultCode     int     `json:"result_code"`
	Message        string  `json:"message"`
	IdempotencyKey string  `json:"idempotency_key,omitempty"`
	RetryOf        int64   `json:"retry_of,omitempty"`
	AlarmStatus    string  `json:"alarm_status"`
	// Attempts lists the routing probes and dispatches when one failed
	// (failover), as [{target, op, error, at_ms}]; empty otherwise.
	Attempts json.RawMessage `json:"attempts"`
}

// Final tells whether the run has ended.
func (r Run) Final() bool { return kind.RunState(r.State).Final() }
