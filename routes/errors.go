package routes

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ringjob/ringjob/internal/kind"
)

// ErrNoCandidates is wrapped by Pick when a job has no candidate targets
// (XXL-JOB: jobconf_trigger_address_empty, "executor address is empty").
var ErrNoCandidates = errors.New("no candidate targets")

// ErrNoProber is wrapped by Pick for failover and busyover when the Router was
// built without a Prober.
var ErrNoProber = errors.New("route strategy needs a prober")

// ErrNoTargetAvailable is wrapped (through *ProbeError) by Pick when failover
// found no live target or busyover found no idle one.
var ErrNoTargetAvailable = errors.New("no target available")

// ProbeError is returned by Pick when every probe of failover or busyover
// failed. Its message concatenates the probe results in order, as XXL-JOB
// concatenates its beat results into the trigger message.
type ProbeError struct {
	Strategy kind.Route // failover or busyover
	JobID    int64      // the job that was being routed
	Attempts []Attempt  // one per candidate, in order
}

func (e *ProbeError) Error() string {
	var b strings.Builder
	what := "live"
	if e.Strategy == kind.RouteBusyover {
		what = "idle"
	}
	fmt.Fprintf(&b, "%s: no %s target for job %d among %d candidate(s): ", e.Strategy, what, e.JobID, len(e.Attempts))
	for i, a := range e.Attempts {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s %s: %v", a.Kind, a.Target, a.Err)
	}
	return b.String()
}

// Unwrap lets errors.Is match ErrNoTargetAvailable.
func (e *ProbeError) Unwrap() error { return ErrNoTargetAvailable }
