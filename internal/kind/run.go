package kind

import (
	"fmt"
	"strings"
)

// RunState is where a run is. A run moves scheduled -> dispatching ->
// running -> a final state; every change is a compare-and-set on the row.
type RunState string

// Run states.
const (
	RunScheduled   RunState = "scheduled"   // in a node's time ring, waiting for its fire time
	RunDispatching RunState = "dispatching" // claimed by a node, being sent to its target
	RunRunning     RunState = "running"     // accepted by the target, outcome pending
	RunSucceeded   RunState = "succeeded"   // the target reported success (XXL code 200)
	RunFailed      RunState = "failed"      // the target reported failure (XXL code 500 or any other)
	RunTimedOut    RunState = "timed_out"   // the run exceeded its timeout (XXL code 502)
	RunKilled      RunState = "killed"      // a kill was accepted by the target or carried out by us
	RunLost        RunState = "lost"        // its dispatcher died mid-dispatch, or its executor vanished
	RunMisfired    RunState = "misfired"    // its fire time passed unfired; recorded under the misfire policy
)

// RunStates lists every run state in the order a run passes through them.
var RunStates = []RunState{RunScheduled, RunDispatching, RunRunning,
	RunSucceeded, RunFailed, RunTimedOut, RunKilled, RunLost, RunMisfired}

// FinalRunStates are the states a run never leaves.
var FinalRunStates = []RunState{RunSucceeded, RunFailed, RunTimedOut, RunKilled, RunLost, RunMisfired}

// Final reports whether a run in this state is finished.
func (s RunState) Final() bool {
	switch s {
	case RunSucceeded, RunFailed, RunTimedOut, RunKilled, RunLost, RunMisfired:
		return true
	}
	return false
}

// Failure reports whether the state is a final state that counts as a
// failure for retries and alarms (everything final except succeeded and
// misfired; a kill is an operator's decision and is neither retried nor
// alarmed, see Retryable).
func (s RunState) Failure() bool {
	return s.Final() && s != RunSucceeded && s != RunMisfired
}

// Retryable reports whether a run that ended in this state is retried when
// its job has retries left: failures, timeouts and lost runs are; a kill is
// the operator's decision and is not.
func (s RunState) Retryable() bool {
	return s == RunFailed || s == RunTimedOut || s == RunLost
}

// Valid reports whether s is a known run state.
func (s RunState) Valid() bool {
	for _, v := range RunStates {
		if s == v {
			return true
		}
	}
	return false
}

// ParseRunState maps a run state name (case and surrounding spaces ignored)
// to its RunState; anything else is an error listing the valid names.
func ParseRunState(name string) (RunState, error) {
	n := RunState(strings.ToLower(strings.TrimSpace(name)))
	if n.Valid() {
		return n, nil
	}
	return "", fmt.Errorf("unknown run state %q: use one of %s", name, Join(RunStates))
}

// Trigger is why a run exists.
type Trigger string

// Trigger types.
const (
	TriggerSchedule Trigger = "schedule" // a fire time of the job's schedule
	TriggerMisfire  Trigger = "misfire"  // fire_once_now compensation for a missed fire
	TriggerManual   Trigger = "manual"   // triggered by a user or the API
	TriggerRetry    Trigger = "retry"    // a retry of a failed run
	TriggerParent   Trigger = "parent"   // a child job triggered by its parent's success
)

// Triggers lists the trigger types.
var Triggers = []Trigger{TriggerSchedule, TriggerMisfire, TriggerManual, TriggerRetry, TriggerParent, TriggerWorkflow}

// Valid reports whether t is a known trigger type.
func (t Trigger) Valid() bool {
	for _, v := range Triggers {
		if t == v {
			return true
		}
	}
	return false
}

// Retry is what follows a run that failed, timed out or was lost, as the
// API shows it on the run.
type Retry string

// What follows a failed run.
const (
	RetryPending   Retry = "pending"   // the scheduler has yet to decide (within its follow-up interval)
	RetryScheduled Retry = "scheduled" // a retry run exists (the run's retry_run_id)
	RetryNone      Retry = "none"      // no retry follows: none left, or the fire is too old
)

// Misfire is what the scheduler does with a fire time it missed by more
// than the pre-read window.
type Misfire string

// Misfire policies.
const (
	MisfireDoNothing   Misfire = "do_nothing"
	MisfireFireOnceNow Misfire = "fire_once_now"
)

// Misfires lists the misfire policies.
var Misfires = []Misfire{MisfireDoNothing, MisfireFireOnceNow}

// Valid reports whether m is a known misfire policy.
func (m Misfire) Valid() bool { return m == MisfireDoNothing || m == MisfireFireOnceNow }

// Join lists the values of a set, comma-separated, for an error message.
func Join[T ~string](vs []T) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}

// Backoff is how the wait between a job's retries grows.
type Backoff string

// Retry backoffs.
const (
	BackoffFixed       Backoff = "fixed"       // the job's retry delay between tries (0 = at once, as XXL-JOB)
	BackoffExponential Backoff = "exponential" // doubling from the retry delay, capped at the maximum delay
)

// Backoffs lists the retry backoffs.
var Backoffs = []Backoff{BackoffFixed, BackoffExponential}

// Valid reports whether b is a known backoff.
func (b Backoff) Valid() bool { return b == BackoffFixed || b == BackoffExponential }

// AfterCompletion is what happens to a job once its schedule has no fire
// left (an `at` job after its fire, a job past its active window) and its
// last run has ended (EventBridge's ActionAfterCompletion).
type AfterCompletion string

// Actions after completion.
const (
	AfterCompletionNone   AfterCompletion = ""       // the job stays, stopped (as before)
	AfterCompletionDelete AfterCompletion = "delete" // the job is deleted; its runs stay for retention
)

// AfterCompletions lists the valid actions ("" spelled none).
func AfterCompletions() []AfterCompletion {
	return []AfterCompletion{AfterCompletionNone, AfterCompletionDelete}
}

// ParseAfterCompletion reads an action; "" and "none" (any case) are AfterCompletionNone.
func ParseAfterCompletion(s string) (AfterCompletion, bool) {
	switch a := AfterCompletion(strings.ToLower(strings.TrimSpace(s))); a {
	case "", "none":
		return AfterCompletionNone, true
	case AfterCompletionDelete:
		return a, true
	}
	return "", false
}

// Destination is the kind of a failure destination.
type Destination string

// Failure destination kinds.
const (
	DestinationSQS         Destination = "sqs"         // arn:aws:sqs:REGION:ACCOUNT:QUEUE
	DestinationSNS         Destination = "sns"         // arn:aws:sns:REGION:ACCOUNT:TOPIC
	DestinationEventBridge Destination = "eventbridge" // arn:aws:events:REGION:ACCOUNT:event-bus/NAME
	DestinationWebhook     Destination = "webhook"     // https://... (http:// too, for a private network)
)
