package store

import "github.com/ringjob/ringjob/internal/kind"

// Group is a pool of targets a job runs on.
type Group struct {
	ID      int64
	AppName string
	Title   string
	Members []string // static target URIs, in order
	// GroupExecutorSettings: the group's own executor token and protocol.
	GroupExecutorSettings
	// FailureDestination receives the records of its jobs' failed runs
	// that have no destination of their own ("" = none).
	FailureDestination string
	CreatedMs          int64
	UpdatedMs          int64
	// Version is bumped by every edit; If-Match writes compare it.
	Version int64
}

// Job is a job definition with its scheduling state.
type Job struct {
	ID            int64
	GroupID       int64
	Name          string
	Description   string
	ScheduleType  string
	ScheduleConf  string
	TimeZone      string
	MisfirePolicy kind.Misfire
	Handler       string
	Params        string
	RouteStrategy kind.Route
	BlockStrategy kind.Block
	TimeoutSec    int
	RetryCount    int
	ShardCount    int
	PinnedTargets []string // restrict the candidates to these targets; empty = all
	// Retries: RetryCount more attempts after a failure, RetryDelaySec apart
	// (RetryBackoff "fixed"), or doubling from it up to RetryMaxDelaySec
	// ("exponential").
	RetryBackoff     kind.Backoff
	RetryDelaySec    int
	RetryMaxDelaySec int
	ChildJobIDs      []int64  // triggered when a run succeeds
	MaxInFlight      int      // 0 = no limit on running runs of the job
	AlarmChannels    []string // alarm channel names (server config)
	AlarmState       kind.JobAlarmState
	Enabled          bool
	LockPartition    int
	NextFireMs       int64 // 0 when the job has no next fire
	LastFireMs       int64
	CreatedMs        int64
	UpdatedMs        int64
	// Version is bumped by every edit through the API (not by the
	// scheduler advancing fire times); If-Match writes compare it.
	Version int64
	// LastOutcome is the final state of the job's newest finished run
	// (LastRunID, finished at LastFinishedMs); "" when none has finished.
	// Set by the write that records outcomes (RunRecordOutcomes).
	LastOutcome    kind.RunState
	LastRunID      int64
	LastFinishedMs int64
	JobOptions
}

// Run is one row of the fire ledger: one fire of one job on one shard.
type Run struct {
	ID             int64
	JobID          int64
	GroupID        int64
	ScheduledMs    int64
	ShardIndex     int
	ShardTotal     int
	Attempt        int
	TriggerType    kind.Trigger
	State          kind.RunState
	Owner          string
	Target         string
	Handler        string
	Params         string
	CreatedMs      int64
	DispatchedMs   int64
	FinishedMs     int64
	Late           bool
	ResultCode     int
	Message        string
	IdempotencyKey string
	// Attempts is the JSON array of routing probes and dispatches, recorded
	// when one failed ("" otherwise).
	Attempts    string
	RetryOf     int64 // the run this one retries, 0 = none
	AlarmStatus kind.AlarmStatus
	// KillRequested is set while a kill is being carried out: the run's
	// target is being asked to stop it.
	KillRequested bool
	// HandedMs is when the run was handed to its target (0: not yet, so a
	// takeover may send it; otherwise it may have arrived).
	HandedMs int64
	// WindowOffsetMs is how far the job's flexible window moved the fire:
	// its schedule time is ScheduledMs - WindowOffsetMs.
	WindowOffsetMs int64
	// FollowupPending says a follow-up service has yet to act on the run's
	// outcome: for a failure, the retry (or the last failure's alarm and
	// record) is still to be decided (see the followup column).
	FollowupPending bool
}

// Node is a scheduler replica as seen through its heartbeat row.
type Node struct {
	ID          string
	Host        string
	StartedMs   int64
	HeartbeatMs int64
	StoppedMs   int64
	// ReapedMs is the heartbeat at which another node declared this one dead
	// (see NodeDeclareDead); equal to HeartbeatMs while it stays dead.
	ReapedMs int64
}

// Declared reports whether another node declared this node dead and has not
// seen it heartbeat since.
func (n Node) Declared() bool { return n.HeartbeatMs > 0 && n.ReapedMs == n.HeartbeatMs }
