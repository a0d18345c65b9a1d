package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
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
	for _, dialect := range storetest.Dialects {
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

// askingDriver is a target that can be asked whether it received a run
// (targets.ReceiptAsker), with the answers set by the test; it records the
// runs sent to it.
type askingDriver struct {
	recordingDriver
	answers map[int64]targets.Receipt // guarded by recordingDriver.mu
	asked   map[int64]int
}

var _ targets.ReceiptAsker = (*askingDriver)(nil)

func (d *askingDriver) Run(ctx context.Context, req targets.Request) (targets.Dispatch, error) {
	d.mu.Lock()
	d.seen = append(d.seen, dispatchSeen{RunID: req.RunID, JobID: req.JobID, ScheduledMs: req.ScheduledAt.UnixMilli()})
	d.mu.Unlock()
	return targets.Dispatch{Message: "accepted"}, nil
}

func (d *askingDriver) Received(_ context.Context, q targets.ReceiptQuery) (targets.Receipt, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.asked[q.RunID]++
	return d.answers[q.RunID], nil
}

func (d *askingDriver) set(id int64, r targets.Receipt) {
	d.mu.Lock()
	d.answers[id] = r
	d.mu.Unlock()
}

// TestRestartAsksTheTargetAboutHandedRuns: a node that starts again asks
// the target of each run its earlier process handed and never heard back
// about: a run the target never received is sent again (same run id),
// once; a run it holds is recorded running and left to report; a run the
// target cannot tell about yet (busy) stays dispatching and is asked again
// at the next scans until the target answers.
func TestRestartAsksTheTargetAboutHandedRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, "sqlite", noon)
	ask := &askingDriver{answers: map[int64]targets.Receipt{}, asked: map[int64]int{}}
	b.drivers = map[string]targets.Driver{"ask": ask}
	g, err := b.st.GroupCreate(ctx, store.GroupCreateParams{AppName: "asking", Members: []string{"ask://x"}, NowMs: noon.UnixMilli()})
	require.NoError(t, err)
	b.group = g
	j := b.job("manual", "none", "", "UTC", kind.MisfireDoNothing, 0)
	now := b.clock.Now().UnixMilli()
	handed := func() int64 {
		r, _, err := b.st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: now - 500, ShardTotal: 1,
			TriggerType: kind.TriggerManual, Owner: "a", CreatedMs: now - 500})
		require.NoError(t, err)
		ids, err := b.st.RunHandOff(ctx, store.RunHandOffParams{Owner: "a", IDs: []int64{r.ID}, NowMs: now - 400, Targets: map[int64]string{r.ID: "ask://x"}})
		require.NoError(t, err)
		require.Equal(t, []int64{r.ID}, ids)
		return r.ID
	}
	notHeld, held, busy := handed(), handed(), handed()
	ask.set(notHeld, targets.ReceiptNotHeld)
	ask.set(held, targets.ReceiptHeld)
	ask.set(busy, targets.ReceiptUnknown)

	b.startNode("a", nil)
	b.step(1, time.Second) // a takeover scan or two
	state := func(id int64) store.Run {
		r, err := b.st.RunGet(ctx, id)
		require.NoError(t, err)
		return r
	}
	require.Eventually(t, func() bool { return state(held).State == kind.RunRunning }, 10*time.Second, 5*time.Millisecond)
	require.Contains(t, state(held).Message, "received by ask://x")
	require.Eventually(t, func() bool { return state(notHeld).State == kind.RunRunning }, 10*time.Second, 5*time.Millisecond,
		"never received: sent again, accepted")
	ask.mu.Lock()
	require.Len(t, ask.seen, 1)
	require.Equal(t, notHeld, ask.seen[0].RunID, "the same run, sent again")
	ask.mu.Unlock()
	require.Equal(t, kind.RunDispatching, state(busy).State, "no answer yet: not lost, not sent")

	b.step(1, 2*time.Second)
	ask.mu.Lock()
	require.Greater(t, ask.asked[busy], 1, "asked again at the next scans")
	ask.mu.Unlock()
	ask.set(busy, targets.ReceiptHeld)
	b.step(1, 2*time.Second)
	require.Eventually(t, func() bool { return state(busy).State == kind.RunRunning }, 10*time.Second, 5*time.Millisecond)
	ask.mu.Lock()
	require.Len(t, ask.seen, 1, "nothing sent twice")
	ask.mu.Unlock()
}
