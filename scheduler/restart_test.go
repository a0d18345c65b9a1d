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
// again under the same id settles the runs an earlier process of it handed
// to a target and never heard back from: a target that cannot be asked
// whether it received the run (this test's driver) leaves it lost, its
// reason naming what is unknown. Runs it handed itself since it started
// are not touched: its services and the API
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
				ids, err := b.st.RunHandOff(ctx, store.RunHandOffParams{Owner: "a", IDs: []int64{r.ID}, NowMs: atMs, Targets: map[int64]string{r.ID: "rec://target"}})
				require.NoError(t, err)
				require.Equal(t, []int64{r.ID}, ids)
				return r.ID
			}
			earlier := handed(now - int64(time.Second/time.Millisecond))
			justNow := handed(now) // as if handed by the new process in its first millisecond

			b.startNode("a", nil)
			var got store.Run
			require.Eventually(t, func() bool {
				var err error
				got, err = b.st.RunGet(ctx, earlier)
				require.NoError(t, err)
				return got.State != kind.RunDispatching
			}, 10*time.Second, 5*time.Millisecond, "handed by the earlier process: settled by the takeover scan")
			require.Equal(t, kind.RunLost, got.State, "handed by the earlier process to a target that cannot be asked: delivery unknown")
			require.Contains(t, got.Message, "an earlier process of scheduler node a died after handing this run to rec://target")
			require.Contains(t, got.Message, "cannot be asked whether it received the run")
			got, err := b.st.RunGet(ctx, justNow)
			require.NoError(t, err)
			require.Equal(t, kind.RunDispatching, got.State, "handed by this process: its answer is still to come")
		})
	}
}
