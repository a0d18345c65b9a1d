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
	// Retry says what follows a run that failed, timed out or was lost:
	// pending (not decided yet, for up to the scheduler's follow-up
	// interval), scheduled (RetryRunID is the retry) or none (this was the
	// last attempt); empty for any other run.
	Retry       string `json:"retry,omitempty"`
	RetryRunID  int64  `json:"retry_run_id,omitempty"`
	AlarmStatus string `json:"alarm_status"`
	// Attempts lists the routing probes and dispatches when one failed
	// (failover), as [{target, op, error, at_ms}]; empty otherwise.
	Attempts json.RawMessage `json:"attempts"`
}

// Final tells whether the run has ended.
func (r Run) Final() bool { return kind.RunState(r.State).Final() }

// FailureRecord is what a failure destination receives, as JSON (an SQS
// message body, an SNS message, an EventBridge event's detail, a webhook's
// POST body): a run that failed, timed out or was lost after its last
// retry, or a fire that misfired.
type FailureRecord struct {
	Version int    `json:"version"` // 1
	RunID   int64  `json:"run_id"`
	JobID   int64  `json:"job_id"`
	Job     string `json:"job"`   // app_name/name
	Group   string `json:"group"` // app_name
	// ScheduledAt is the fire's schedule time; FireAt is when it was due
	// after the job's flexible window moved it (the same without one).
	ScheduledAt string `json:"scheduled_at"`
	FireAt      string `json:"fire_at"`
	FinishedAt  string `json:"finished_at,omitempty"`
	Outcome     string `json:"outcome"` // failed, timed_out, lost, misfired
	Message     string `json:"message"`
	Attempt     int    `json:"attempt"` // 0 = the first try
	Trigger     string `json:"trigger"`
	Target      string `json:"target,omitempty"`
}

// KillScope is what a kill of a run would stop, asked before the kill (GET
// /api/v1/runs/{id}/kill-scope): every run it stops, with its shard and
// target, and whether the target stops the whole job.
type KillScope struct {
	RunID int64 `json:"run_id"`
	// State is the run's state now.
	State string `json:"state"`
	// Killable: POST /api/v1/runs/{id}/kill would be carried out now. False
	// for a run that has ended, or that is being dispatched and whose
	// target is not recorded yet (Summary says which).
	Killable bool `json:"killable"`
	// Target is where the run is going on; "" before it is dispatched.
	Target string `json:"target"`
	// KillsWholeJob: the target stops every run of the job it holds, not
	// only the one named (XXL-JOB's /kill is by job id), as its driver
	// declares.
	KillsWholeJob bool `json:"kills_whole_job"`
	// Stops lists every run the kill stops, the run itself first.
	Stops []Run `json:"stops"`
	// Summary says what the kill stops in a sentence a human can read.
	Summary string `json:"summary"`
}
