package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/store"
)

// TestRestartMarksOnlyAnEarlierIncarnationsRunsLost: a node that starts
// again under the same id records the runs an earlier process of it handed
// to a target and never heard back from as lost (delivery unknown), but
// not the runs it handed itself since it started: its services and the API
// run before that check, and a run triggered in that instant was recorded
// lost although its executor ran it and reported (seen as a flaky
// TestGroupExecutorTokenRotation under load).
func TestRestartMarksOnlyAnEarlierIncarnationsRunsLost(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{"sqlite", "mysql"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := setup(t, dialect, noon)
			j := b.job("manual", "none", "", "UTC", kind.MisfireDoNothing, 0)
			now := b.clock.Now().UnixMilli()
			handed := func(atMs int64) int64 {
				r, _, err := b.st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: atMs, ShardTotal: 1,
					TriggerType: kind.TriggerManual, Owner: "a", CreatedMs: atMs})
				require.NoError(t, err)
				ids, err := b.st.RunHandOff(ctx, store.RunHandOffParams{Owner: "a", IDs: []int64{r.ID}, NowMs: atMs})
				require.NoError(t, err)
				require.Equal(t, []int64{r.ID}, ids)
				return r.ID
			}
			earlier := handed(now - int64(time.Second/time.Millisecond))
			justNow := handed(now) // as if handed by the new process in its first millisecond

			b.startNode("a", nil)
			got, err := b.st.RunGet(ctx, earlier)
			require.NoError(t, err)
			require.Equal(t, kind.RunLost, got.State, "handed by the earlier process: delivery unknown")
			require.Contains(t, got.Message, "restarted after handing this run")
			got, err = b.st.RunGet(ctx, justNow)
			require.NoError(t, err)
			require.Equal(t, kind.RunDispatching, got.State, "handed by this process: its answer is still to come")
		})
	}
}
