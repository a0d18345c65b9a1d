package store

// Run states. A run moves scheduled -> dispatching -> running -> a final
// state; every change is a compare-and-set on the row.
const (
	RunScheduled   = "scheduled"   // in a node's time ring, waiting for its fire time
	RunDispatching = "dispatching" // claimed by a node, being sent to its target
	RunRunning     = "running"     // accepted by the target, outcome pending
	RunSucceeded   = "succeeded"
	RunFailed      = "failed"
	RunTimedOut    = "timed_out"
	RunKilled      = "killed"
	RunLost        = "lost"     // its dispatcher died mid-dispatch, or its executor vanished
	RunMisfired    = "misfired" // its fire time passed unfired; recorded under the misfire policy
)

// FinalRunStates are the states a run never leaves.
var FinalRunStates = []string{RunSucceeded, RunFailed, RunTimedOut, RunKilled, RunLost, RunMisfired}

// Trigger types: why a run exists.
const (
	TriggerSchedule = "schedule" // a fire time of the job's schedule
	TriggerMisfire  = "misfire"  // fire_once_now compensation for a missed fire
	TriggerManual   = "manual"   // triggered by a user or the API
	TriggerRetry    = "retry"
	TriggerParent   = "parent" // a child job triggered by its parent's success
)

// Misfire policies.
const (
	MisfireDoNothing   = "do_nothing"
	MisfireFireOnceNow = "fire_once_now"
)

// Group is a pool of targets a job runs on.
type Group struct {
	ID      int64
	AppName string
	Title   string
	Members []string // static target URIs, in order
	// GroupExecutorSettings: the group's own executor token and protocol.
	GroupExecutorSettings
	CreatedMs int64
	UpdatedMs int64
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
	MisfirePolicy string
	Handler       string
	Params        string
	RouteStrategy string
	BlockStrategy string
	TimeoutSec    int
	RetryCount    int
	ShardCount    int
	PinnedTargets []string // restrict the candidates to these targets; empty = all
	// Retries: RetryCount more attempts after a failure, RetryDelaySec apart
	// (RetryBackoff "fixed"), or doubling from it up to RetryMaxDelaySec
	// ("exponential").
	RetryBackoff     string
	RetryDelaySec    int
	RetryMaxDelaySec int
	ChildJobIDs      []int64  // triggered when a run succeeds
	MaxInFlight      int      // 0 = no limit on running runs of the job
	AlarmChannels    []string // alarm channel names (server config)
	AlarmState       string   // "ok" or "failing"
	Enabled          bool
	LockPartition    int
	NextFireMs       int64 // 0 when the job has no next fire
	LastFireMs       int64
	CreatedMs        int64
	UpdatedMs        int64
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
	TriggerType    string
	State          string
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
	AlarmStatus int   // AlarmNone, AlarmNotNeeded, AlarmSent, AlarmFailed
	// HandedMs is when the run was handed to its target (0: not yet, so a
	// takeover may send it; otherwise it may have arrived).
	HandedMs int64
}

// Alarm states of a run (XXL-JOB's alarm_status).
const (
	AlarmNone      = 0
	AlarmNotNeeded = 1
	AlarmSent      = 2
	AlarmFailed    = 3
)

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
