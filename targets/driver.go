package targets

import (
	"context"
	"time"

	"github.com/ringjob/ringjob/internal/kind"
)

// Request is one dispatch of one run to one target.
type Request struct {
	RunID         int64
	JobID         int64
	Target        string // the target URI, e.g. local://hello
	Handler       string // handler name (HTTP executors, functions); empty for local targets
	Params        string
	ShardIndex    int
	ShardTotal    int           // 1 when not sharding
	Timeout       time.Duration // 0 = no timeout
	ScheduledAt   time.Time     // the fire time this run belongs to
	Attempt       int           // 0 for the first attempt, 1.. for retries
	BlockStrategy kind.Block
}

// Outcome is the final result of a run on its target.
type Outcome struct {
	State   kind.RunState // succeeded, failed, timed_out or killed
	Code    int           // handle code: 200 success, 500 failure, 502 timeout, or an exit code
	Message string
}

// Dispatch is what Run returns when the target accepted the run.
type Dispatch struct {
	// Done is set when the run already finished inside Run (synchronous targets,
	// such as a no-op driver or a Lambda RequestResponse invoke). When nil, the
	// run is now running and the driver reports the outcome later through Sink.Complete.
	Done *Outcome
	// Message is a short human-readable note about the dispatch (for the run record).
	Message string
}

// LogChunk is a slice of a run's log, by 1-based line numbers.
type LogChunk struct {
	FromLine int    `json:"from_line"`
	ToLine   int    `json:"to_line"` // last line returned, 0 when none
	Content  string `json:"content"`
	End      bool   `json:"end"` // true when the run has finished and no more lines follow
	// ServerLog is set by the server, never by a driver: for a run whose
	// log is its target's (an XXL-JOB executor's), the lines Ringjob itself
	// wrote on the run (outcomes that came after it ended, alarm results),
	// which the target's log cannot hold.
	ServerLog string `json:"server_log,omitempty"`
}

// Sink is what the scheduler hands a driver so that asynchronous outcomes and
// output reach the fire ledger. It is safe for concurrent use.
type Sink interface {
	// Complete records the final outcome of a run that Run accepted without Done.
	// Only the first outcome for a run counts; later ones are logged on the
	// run and not applied.
	Complete(ctx context.Context, runID int64, out Outcome) error
	// AppendLog appends text (one or more lines) to the run's central log.
	AppendLog(ctx context.Context, runID int64, text string) error
	// ReadLog reads the run's central log from a 1-based line.
	ReadLog(ctx context.Context, runID int64, fromLine int) (LogChunk, error)
}

// Result is one run's final outcome with who reported it, for BatchSink.
type Result struct {
	RunID int64
	Outcome
	// Source names the reporter for the run's log when the outcome comes
	// after the run has ended ("executor callback", "kill", ...); "" = the
	// target's driver.
	Source string
	// Target is where the run went, when the reporter knows it and the
	// record may not say yet ("" keeps what the record says).
	Target string
	// JobID is the run's job when the reporter knows it (0: unknown): the
	// job's last outcome is then set without reading the run again.
	JobID int64
}

// BatchSink is a Sink that records many outcomes in one write. It returns
// only once they are durable (so a caller may acknowledge them), and says per
// result whether it was applied: the first final outcome of a run wins; a
// later one is written to the run's log, never applied.
type BatchSink interface {
	Sink
	CompleteMany(ctx context.Context, results []Result) ([]bool, error)
}

// Driver runs targets of one or more URI schemes. Every method takes the full
// target URI so that one driver can serve many targets.
type Driver interface {
	// Run dispatches a run. An error means the target did not accept it (the run
	// fails, or failover moves on); it must not be returned after the target accepted.
	Run(ctx context.Context, req Request) (Dispatch, error)
	// Beat reports whether the target is reachable (used by failover routing).
	Beat(ctx context.Context, target string) error
	// IdleBeat reports whether the target is idle for the job (used by busyover
	// routing); an error means busy or unreachable.
	IdleBeat(ctx context.Context, target string, jobID int64) error
	// Kill stops a running run. Killing a run that is not running is not an error.
	Kill(ctx context.Context, target string, runID, jobID int64) error
	// Log reads a run's log from a 1-based line.
	Log(ctx context.Context, target string, runID int64, fromLine int) (LogChunk, error)
}

// Validator is implemented by drivers that can check a target URI without
// contacting it (for example that a local command is declared). Groups are
// validated with it before they are saved.
type Validator interface {
	ValidateTarget(target string) error
}

// RunLimiter is implemented by drivers whose targets bound how long a run
// can go on: past MaxRunTime after its dispatch, a run on target can no
// longer report (a Lambda function runs 15 minutes at most, and an event
// waits in Lambda's queue no longer than its maximum age). 0: no bound.
// It is not one of the Capabilities, which are the same for every target of
// a kind: the bound is per target (a Lambda target's mode picks it).
type RunLimiter interface {
	MaxRunTime(target string) time.Duration
}

// MaxRunTime is the bound target's driver gives (0 when it gives none or the
// target has no driver).
func (r *Registry) MaxRunTime(target string) time.Duration {
	d, err := r.For(target)
	if err != nil {
		return 0
	}
	if l, ok := d.(RunLimiter); ok {
		return l.MaxRunTime(target)
	}
	return 0
}

// Validate checks a target URI: its scheme has a driver, and the driver
// accepts it when it can tell.
func (r *Registry) Validate(target string) error {
	d, err := r.For(target)
	if err != nil {
		return err
	}
	if v, ok := d.(Validator); ok {
		return v.ValidateTarget(target)
	}
	return nil
}
