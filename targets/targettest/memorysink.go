package targettest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringjob/ringjob/targets"
)

// MemorySink is an in-memory targets.Sink for tests. It records the first
// outcome of each run (later ones are counted but ignored, as the contract
// says), keeps each run's log as lines, and lets a test wait for an outcome
// or for log lines without sleeping. It is safe for concurrent use; the zero
// value is not usable, build one with NewMemorySink.
type MemorySink struct {
	mu          sync.Mutex
	outcomes    map[int64]targets.Outcome
	completions map[int64]int
	logs        map[int64][]string
	// changed is closed and replaced on every change, waking the waiters.
	changed chan struct{}
}

var _ targets.Sink = (*MemorySink)(nil)

// NewMemorySink returns an empty sink.
func NewMemorySink() *MemorySink {
	return &MemorySink{
		outcomes:    map[int64]targets.Outcome{},
		completions: map[int64]int{},
		logs:        map[int64][]string{},
		changed:     make(chan struct{}),
	}
}

// notifyLocked wakes everyone waiting for a change. s.mu must be held.
func (s *MemorySink) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Complete records the run's outcome if it has none yet; every call is counted
// (see Completions).
func (s *MemorySink) Complete(_ context.Context, runID int64, out targets.Outcome) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.completions[runID]++
	if _, ok := s.outcomes[runID]; !ok {
		s.outcomes[runID] = out
	}
	s.notifyLocked()
	return nil
}

// AppendLog appends text to the run's log. The text is one or more lines; a
// final newline ends the last line and does not start an empty one, and a last
// line without a newline still counts as a whole line. Empty text appends
// nothing.
func (s *MemorySink) AppendLog(_ context.Context, runID int64, text string) error {
	if text == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logs[runID] = append(s.logs[runID], lines...)
	s.notifyLocked()
	return nil
}

// ReadLog returns the run's lines from the 1-based fromLine (values below 1
// read from line 1) to the end, each ended by a newline. ToLine is the last
// line returned, 0 when there is none. End is true once the run has an outcome
// recorded through Complete. An unknown run reads as an empty log.
func (s *MemorySink) ReadLog(_ context.Context, runID int64, fromLine int) (targets.LogChunk, error) {
	if fromLine < 1 {
		fromLine = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, done := s.outcomes[runID]
	chunk := targets.LogChunk{FromLine: fromLine, End: done}
	lines := s.logs[runID]
	if fromLine > len(lines) {
		return chunk, nil
	}
	chunk.Content = strings.Join(lines[fromLine-1:], "\n") + "\n"
	chunk.ToLine = len(lines)
	return chunk, nil
}

// Outcome returns the run's recorded outcome, if any.
func (s *MemorySink) Outcome(runID int64) (targets.Outcome, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out, ok := s.outcomes[runID]
	return out, ok
}

// Completions returns how many times Complete was called for the run,
// including the ignored calls after the first.
func (s *MemorySink) Completions(runID int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.completions[runID]
}

// Lines returns a copy of the run's log lines.
func (s *MemorySink) Lines(runID int64) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.logs[runID]...)
}

// WaitOutcome waits until the run has an outcome and returns it. It fails the
// test (t.Fatalf, so call it from the test's goroutine) when none arrives
// within timeout, showing the run's log so far.
func (s *MemorySink) WaitOutcome(t testing.TB, runID int64, timeout time.Duration) targets.Outcome {
	t.Helper()
	var out targets.Outcome
	ok := s.wait(timeout, func() bool {
		var found bool
		out, found = s.outcomes[runID]
		return found
	})
	if !ok {
		t.Fatalf("run %d: no outcome within %s; log so far:\n%s", runID, timeout, strings.Join(s.Lines(runID), "\n"))
	}
	return out
}

// WaitLog waits until until(lines) is true for the run's log lines and returns
// those lines. until is called with the sink's lock held and must not call the
// sink. It fails the test when the condition is not met within timeout.
func (s *MemorySink) WaitLog(t testing.TB, runID int64, timeout time.Duration, until func(lines []string) bool) []string {
	t.Helper()
	var lines []string
	ok := s.wait(timeout, func() bool {
		if until(s.logs[runID]) {
			lines = append([]string(nil), s.logs[runID]...)
			return true
		}
		return false
	})
	if !ok {
		t.Fatalf("run %d: log condition not met within %s; log so far:\n%s", runID, timeout, strings.Join(s.Lines(runID), "\n"))
	}
	return lines
}

// wait calls cond with s.mu held each time the sink changes, until it returns
// true (wait returns true) or timeout passes (wait returns false).
func (s *MemorySink) wait(timeout time.Duration, cond func() bool) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s.mu.Lock()
		if cond() {
			s.mu.Unlock()
			return true
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
			s.mu.Lock()
			defer s.mu.Unlock()
			return cond()
		}
	}
}
