package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/targets"
)

// A run accepted by its target is shown running with its target, and a run
// whose outcome comes right after the send (a fast executor's callback,
// before the accept is written) is recorded with its target too.
func TestAcceptAndFastOutcome(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
			n := b.startNode("a", nil)
			ctx := context.Background()
			slow := b.job("slow", "none", "", "UTC", "", 0)
			fast := b.job("fast", "none", "", "UTC", "", 0)
			n.rec.mu.Lock()
			n.rec.hold = map[int64]bool{slow.ID: true, fast.ID: true}
			n.rec.mu.Unlock()

			r1, _, err := n.s.Trigger(ctx, schedulerTrigger(slow.ID))
			require.NoError(t, err)
			r2, _, err := n.s.Trigger(ctx, schedulerTrigger(fast.ID))
			require.NoError(t, err)
			b.waitDispatched(2)
			_, err = n.s.Sink().CompleteMany(ctx, []targets.Result{{RunID: r2.ID, Outcome: targets.Outcome{State: kind.RunSucceeded, Code: 200, Message: "done"}}})
			require.NoError(t, err)

			got, err := b.st.RunGet(ctx, r2.ID)
			require.NoError(t, err)
			require.Equal(t, kind.RunSucceeded, got.State)
			require.Equal(t, "rec://target", got.Target, "the fast run's outcome records where it went")

			require.Eventually(t, func() bool {
				got, err := b.st.RunGet(ctx, r1.ID)
				return err == nil && got.State == kind.RunRunning && got.Target == "rec://target"
			}, 10*time.Second, 10*time.Millisecond, "the run that never reports shows running on its target")
			// The held accept of the fast run, written or dropped, changed nothing.
			got, err = b.st.RunGet(ctx, r2.ID)
			require.NoError(t, err)
			require.Equal(t, kind.RunSucceeded, got.State)
		})
	}
}
