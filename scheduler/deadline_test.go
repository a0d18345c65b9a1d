package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/store"
)

// TestRunWithoutTimeoutHasADeadline: a run whose job has no timeout and
// whose target never reports does not stay running forever. Its deadline
// (scheduler.run_deadline) is read from the database, so the replica that
// stays enforces it after the one that dispatched the run has stopped.
func TestRunWithoutTimeoutHasADeadline(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", noon)
	j := b.jobWith("no-timeout", func(f *store.JobFields) { f.TimeoutSec, f.RetryCount = 0, 0 })
	cfg := func(c *scheduler.Config) {
		c.RunDeadline, c.LostGrace, c.LostCheckInterval = 30*time.Second, 10*time.Second, 2*time.Second
	}
	a := b.startNode("a", cfg)
	a.rec.mu.Lock()
	a.rec.hold = map[int64]bool{j.ID: true}
	a.rec.mu.Unlock()
	b.settle(1)
	r, _, err := a.s.Trigger(context.Background(), scheduler.TriggerParams{JobID: j.ID})
	require.NoError(t, err)
	b.waitDispatched(1)
	require.Eventually(t, func() bool { got, _ := b.st.RunGet(context.Background(), r.ID); return got.State == kind.RunRunning }, 5*time.Second, 5*time.Millisecond)

	stay := b.startNode("b", cfg)
	b.settle(2)
	a.s.Stop(context.Background())
	b.nodes = []*node{stay}

	b.step(1, 20*time.Second)
	got, err := b.st.RunGet(context.Background(), r.ID)
	require.NoError(t, err)
	require.Equal(t, kind.RunRunning, got.State, "before its deadline the run keeps running: %s", got.Message)

	b.step(1, 25*time.Second) // 30 s deadline + 10 s grace have passed
	got, err = b.st.RunGet(context.Background(), r.ID)
	require.NoError(t, err)
	require.Equal(t, kind.RunLost, got.State, got.Message)
	require.Contains(t, got.Message, "scheduler.run_deadline, 30s")
}
