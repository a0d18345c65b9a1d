package apitypes

// JobFields are a job's settings up to its children, as they travel: in
// the REST API's job bodies (POST/PUT /api/v1/jobs), in jobs as code (the
// YAML files, POST /api/v1/plan and /apply) and in the version a plan gives
// each job.
//
// A job's children sit between JobFields and JobLimits on the wire, and
// are spelled differently in each body (ids in the REST API, names in jobs
// as code), so each body embeds JobFields, declares its children, then
// embeds JobLimits: the order of the JSON and YAML keys is the one these
// bodies have always had. Zero values are left out of JSON and YAML
// (omitempty): the server treats a missing setting and its zero value
// alike.
type JobFields struct {
	Description      string   `json:"description,omitempty" yaml:"description,omitempty"`
	ScheduleType     string   `json:"schedule_type,omitempty" yaml:"schedule_type,omitempty"`
	ScheduleConf     string   `json:"schedule_conf,omitempty" yaml:"schedule_conf,omitempty"`
	TimeZone         string   `json:"time_zone,omitempty" yaml:"time_zone,omitempty"`
	MisfirePolicy    string   `json:"misfire_policy,omitempty" yaml:"misfire_policy,omitempty"`
	Handler          string   `json:"handler,omitempty" yaml:"handler,omitempty"`
	Params           string   `json:"params,omitempty" yaml:"params,omitempty"`
	RouteStrategy    string   `json:"route_strategy,omitempty" yaml:"route_strategy,omitempty"`
	BlockStrategy    string   `json:"block_strategy,omitempty" yaml:"block_strategy,omitempty"`
	TimeoutSec       int      `json:"timeout_sec,omitempty" yaml:"timeout_sec,omitempty"`
	RetryCount       int      `json:"retry_count,omitempty" yaml:"retry_count,omitempty"`
	ShardCount       int      `json:"shard_count,omitempty" yaml:"shard_count,omitempty"`
	PinnedTargets    []string `json:"pinned_targets,omitempty" yaml:"pinned_targets,omitempty"`
	RetryBackoff     string   `json:"retry_backoff,omitempty" yaml:"retry_backoff,omitempty"`
	RetryDelaySec    int      `json:"retry_delay_sec,omitempty" yaml:"retry_delay_sec,omitempty"`
	RetryMaxDelaySec int      `json:"retry_max_delay_sec,omitempty" yaml:"retry_max_delay_sec,omitempty"`
	JobOptions       `yaml:",inline"`
}

// JobOptions are the schedule options of cloud schedulers (EventBridge
// Scheduler's names in brackets):
//   - ActiveFrom, ActiveUntil (StartDate, EndDate): RFC 3339 instants; no
//     fire before the one nor after the other ("" = open);
//   - FlexibleWindowMin (FlexibleTimeWindow): 1..1440; each fire moves a
//     fixed per-job offset within that many minutes after its schedule
//     time, and is late only after the window ends (0 = off);
//   - MaxEventAgeSec (MaximumEventAgeInSeconds): 60..86400; a fire older
//     than this is neither retried nor caught up (0 = no limit);
//   - AfterCompletion (ActionAfterCompletion): "delete" deletes the job
//     once its schedule has no fire left and its last run has ended;
//     "" / "none" keeps it, stopped;
//   - FailureDestination (DeadLetterConfig): where the record of a run that
//     failed for good, or of a misfired fire, is delivered: an SQS queue,
//     SNS topic or EventBridge bus ARN, or a webhook URL ("" = the group's).
type JobOptions struct {
	ActiveFrom         string `json:"active_from,omitempty" yaml:"active_from,omitempty" version:"omitzero"`
	ActiveUntil        string `json:"active_until,omitempty" yaml:"active_until,omitempty" version:"omitzero"`
	FlexibleWindowMin  int    `json:"flexible_window_min,omitempty" yaml:"flexible_window_min,omitempty" version:"omitzero"`
	MaxEventAgeSec     int    `json:"max_event_age_sec,omitempty" yaml:"max_event_age_sec,omitempty" version:"omitzero"`
	AfterCompletion    string `json:"after_completion,omitempty" yaml:"after_completion,omitempty" version:"omitzero"`
	FailureDestination string `json:"failure_destination,omitempty" yaml:"failure_destination,omitempty" version:"omitzero"`
}

// JobLimits are a job's settings after its children: how many of its runs
// may be in flight, and which alarm channels hear of its failures.
type JobLimits struct {
	MaxInFlight   int      `json:"max_in_flight,omitempty" yaml:"max_in_flight,omitempty"`
	AlarmChannels []string `json:"alarm_channels,omitempty" yaml:"alarm_channels,omitempty"`
}

// JobInput is the body of POST /api/v1/jobs and PUT /api/v1/jobs/{id} as a
// client sends it.
type JobInput struct {
	GroupID int64  `json:"group_id"`
	Name    string `json:"name"`
	JobFields
	ChildJobIDs []int64 `json:"child_job_ids,omitempty"`
	JobLimits
	Enabled *bool `json:"enabled,omitempty"`
}

// Job is a job as the server shows it (GET /api/v1/jobs/{id}).
type Job struct {
	ID               int64    `json:"id"`
	GroupID          int64    `json:"group_id"`
	Name             string   `json:"name"`
	Description      string   `json:"description"`
	ScheduleType     string   `json:"schedule_type"`
	ScheduleConf     string   `json:"schedule_conf"`
	TimeZone         string   `json:"time_zone"`
	MisfirePolicy    string   `json:"misfire_policy"`
	Handler          string   `json:"handler"`
	Params           string   `json:"params"`
	RouteStrategy    string   `json:"route_strategy"`
	BlockStrategy    string   `json:"block_strategy"`
	TimeoutSec       int      `json:"timeout_sec"`
	RetryCount       int      `json:"retry_count"`
	ShardCount       int      `json:"shard_count"`
	PinnedTargets    []string `json:"pinned_targets"`
	RetryBackoff     string   `json:"retry_backoff"`
	RetryDelaySec    int      `json:"retry_delay_sec"`
	RetryMaxDelaySec int      `json:"retry_max_delay_sec"`
	ChildJobIDs      []int64  `json:"child_job_ids"`
	// ChildJobs names child_job_ids in the same order, as GROUP/NAME (its
	// group's app name and its name, as jobs as code names children), or
	// as the id in decimal for a child in a group the caller may not read.
	// Read-only: a write sets the children with child_job_ids.
	ChildJobs     []string `json:"child_jobs"`
	MaxInFlight   int      `json:"max_in_flight"`
	AlarmChannels []string `json:"alarm_channels"`
	// The schedule options, each left out when not set.
	JobOptions
	AlarmState string  `json:"alarm_state"`
	Enabled    bool    `json:"enabled"`
	NextFireAt *string `json:"next_fire_at"`
	LastFireAt *string `json:"last_fire_at"`
	// LastOutcome is the final state of the job's newest finished run, ""
	// when none has finished; the jobs list filters on it.
	LastOutcome string `json:"last_outcome"`
	// LastFinishedAt and LastRunID: when that run finished, and which
	// run it is (0: none). A job that fires again within seconds and
	// keeps ending the same way is not rewritten at every run, so these
	// may name a run that finished up to 5 s before the newest (with the
	// same outcome); once a job stops firing, its last run is named.
	LastFinishedAt *string `json:"last_finished_at"`
	LastRunID      int64   `json:"last_run_id"`
	// LastRunPurged: retention has deleted that run since (the outcome and
	// end time above stay true), so there is nothing to link to.
	LastRunPurged bool    `json:"last_run_purged"`
	CreatedAt     *string `json:"created_at"`
	UpdatedAt     *string `json:"updated_at"`

	// ETag is the job's version from the ETag header, for If-Match; a
	// client fills it in, it is not part of the body.
	ETag string `json:"-"`
}

// TriggerInput is the optional body of POST /api/v1/jobs/{id}/trigger.
type TriggerInput struct {
	Params *string `json:"params,omitempty"`
	Target string  `json:"target,omitempty"`
	// ShardTotal fans the trigger out to this many shards instead of the
	// job's own count; ShardIndex (0-based) triggers only that shard.
	ShardTotal int  `json:"shard_total,omitempty"`
	ShardIndex *int `json:"shard_index,omitempty"`
}

// PreviewInput is the body of POST /api/v1/next-fires.
type PreviewInput struct {
	ScheduleType string `json:"schedule_type"`
	ScheduleConf string `json:"schedule_conf"`
	TimeZone     string `json:"time_zone,omitempty"`
	N            int    `json:"n,omitempty"`
	// Name and the window options bound and move the fires as they would a
	// job's (the flexible window's offset depends on the job's name).
	Name              string `json:"name,omitempty"`
	ActiveFrom        string `json:"active_from,omitempty"`
	ActiveUntil       string `json:"active_until,omitempty"`
	FlexibleWindowMin int    `json:"flexible_window_min,omitempty"`
}

// NextFires are the next fire times of a schedule.
type NextFires struct {
	TimeZone string   `json:"time_zone"`
	Items    []string `json:"items"` // UTC
	Local    []string `json:"local"` // the same instants in the schedule's zone
	// Note says what the job's windows do to its fires: none after the
	// active window ends, none before it opens, each moved by the flexible
	// window ("" = nothing to say).
	Note string `json:"note,omitempty"`
}
