package alarm

import (
	"fmt"
	"strings"
	"time"

	"github.com/ringjob/ringjob/internal/kind"
)

// Statuses of a Result. They match XXL-JOB's alarm_status values 1, 2 and 3
// (no alarm needed, sent, failed); XXL-JOB's 0 (not yet handled) and -1
// (claimed) belong to the caller that claims runs for alarming.
const (
	StatusNotNeeded = "not_needed" // the job names no alarm channel
	StatusSent      = "sent"       // every channel delivered the alarm
	StatusFailed    = "failed"     // at least one channel gave up
)

// Result is the outcome of one alarm over all its channels, reported once
// through Options.Record when every channel has succeeded or given up.
type Result struct {
	Kind     kind.AlarmEvent `json:"kind"`   // the event's kind
	Status   string          `json:"status"` // StatusNotNeeded, StatusSent or StatusFailed
	Attempts []AttemptRecord `json:"attempts"`
}

// AttemptRecord is one delivery attempt over one channel, in the order the
// attempts ended. Err is empty on success; it never holds a secret.
type AttemptRecord struct {
	Sender string    `json:"sender"` // channel name
	At     time.Time `json:"at"`     // when the attempt started (the dispatcher's clock)
	Err    string    `json:"error,omitempty"`
}

// Summary is a one-line account of the result for a run's history, such as
// "sent: oncall-slack ok (1 attempt), oncall-mail ok (3 attempts)" or
// "failed: oncall-mail gave up after 5 attempts: ...".
func (r Result) Summary() string {
	if r.Status == StatusNotNeeded {
		return "not needed: the job names no alarm channel"
	}
	type acc struct {
		n       int
		lastErr string
	}
	var order []string
	per := map[string]*acc{}
	for _, a := range r.Attempts {
		s, ok := per[a.Sender]
		if !ok {
			s = &acc{}
			per[a.Sender] = s
			order = append(order, a.Sender)
		}
		if a.Err != ErrStopped.Error() { // not an attempt, the reason it ended
			s.n++
		}
		s.lastErr = a.Err
	}
	parts := make([]string, 0, len(order))
	for _, name := range order {
		s := per[name]
		plural := "s"
		if s.n == 1 {
			plural = ""
		}
		if s.lastErr == "" {
			parts = append(parts, fmt.Sprintf("%s ok (%d attempt%s)", name, s.n, plural))
		} else {
			parts = append(parts, fmt.Sprintf("%s gave up after %d attempt%s: %s", name, s.n, plural, s.lastErr))
		}
	}
	return r.Status + ": " + strings.Join(parts, "; ")
}
