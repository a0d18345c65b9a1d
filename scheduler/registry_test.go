package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/store"
)

func TestSilentExecutorIsDroppedAfter90s(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", noon)
	ctx := context.Background()
	g, err := b.st.GroupCreate(ctx, store.GroupCreateParams{AppName: "orders", GroupExecutorSettings: store.GroupExecutorSettings{AcceptRegistrations: true}, NowMs: noon.UnixMilli()})
	require.NoError(t, err)
	j, err := b.st.JobCreate(ctx, store.JobCreateParams{JobFields: store.JobFields{GroupID: g.ID, Name: "sync", ScheduleType: "none", TimeZone: "UTC", ShardCount: 1}, NowMs: noon.UnixMilli()})
	require.NoError(t, err)
	// Two executors beat once; the recording driver stands in for http://.
	for _, a := range []string{"rec://exec-b:9999", "rec://exec-a:9999"} {
		require.NoError(t, b.st.RegistryUpsert(ctx, store.RegistryUpsertParams{AppName: "orders", Address: a, NowMs: noon.UnixMilli()}))
	}
	n := b.startNode("a", nil)
	b.settle(1)
	run, _, err := n.s.Trigger(ctx, schedulerTrigger(j.ID))
	require.NoError(t, err)
	b.waitDispatched(1)
	rs := b.waitSettledRuns(j.ID)
	require.Equal(t, "rec://exec-a:9999", rs[0].Target, "registered executors are candidates, sorted")
	require.Equal(t, run.ID, rs[0].ID)

	b.step(1, 95*time.Second) // no more beats
	_, _, err = n.s.Trigger(ctx, schedulerTrigger(j.ID))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		for _, r := range b.runs(j.ID) {
			if r.State == kind.RunFailed {
				require.Contains(t, r.Message, "no executor registered")
				return true
			}
		}
		return false
	}, 10*time.Second, 5*time.Millisecond, "a silent executor is no longer a candidate")
	b.step(1, 30*time.Second) // the registry monitor sweeps
	left, err := b.st.RegistryList(ctx, store.RegistryListParams{})
	require.NoError(t, err)
	require.Empty(t, left, "dropped from the registry")
}

// Candidates are cached, so a dispatch does not read the registry; a change
// made through this replica (ForgetTargets) is seen by the next dispatch.
func TestForgetTargetsSeesANewExecutorAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", noon)
	ctx := context.Background()
	g, err := b.st.GroupCreate(ctx, store.GroupCreateParams{AppName: "orders", GroupExecutorSettings: store.GroupExecutorSettings{AcceptRegistrations: true}, NowMs: noon.UnixMilli()})
	require.NoError(t, err)
	j, err := b.st.JobCreate(ctx, store.JobCreateParams{JobFields: store.JobFields{GroupID: g.ID, Name: "sync", ScheduleType: "none", TimeZone: "UTC", ShardCount: 1}, NowMs: noon.UnixMilli()})
	require.NoError(t, err)
	require.NoError(t, b.st.RegistryUpsert(ctx, store.RegistryUpsertParams{AppName: "orders", Address: "rec://exec-b:9999", NowMs: noon.UnixMilli()}))
	n := b.startNode("a", nil)
	b.settle(1)
	trigger := func(want int) string {
		t.Helper()
		run, _, err := n.s.Trigger(ctx, schedulerTrigger(j.ID))
		require.NoError(t, err)
		b.waitDispatched(want)
		for _, r := range b.waitSettledRuns(j.ID) {
			if r.ID == run.ID {
				return r.Target
			}
		}
		t.Fatalf("run %d not found", run.ID)
		return ""
	}
	require.Equal(t, "rec://exec-b:9999", trigger(1))

	// exec-a sorts first, so `first` routing picks it once it is a candidate.
	require.NoError(t, b.st.RegistryUpsert(ctx, store.RegistryUpsertParams{AppName: "orders", Address: "rec://exec-a:9999", NowMs: noon.UnixMilli()}))
	require.Equal(t, "rec://exec-b:9999", trigger(2), "within the cache's life the registry is not read again")
	n.s.ForgetTargets()
	require.Equal(t, "rec://exec-a:9999", trigger(3))
}
