package store_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/store"
)

func TestExecutorRegistry(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		for _, a := range []string{"http://b:9999", "http://a:9999"} {
			require.NoError(t, st.RegistryUpsert(ctx, store.RegistryUpsertParams{AppName: "orders", Address: a, NowMs: t0}))
		}
		require.NoError(t, st.RegistryUpsert(ctx, store.RegistryUpsertParams{AppName: "orders", Address: "http://a:9999", NowMs: t0 + 30_000}))
		require.NoError(t, st.RegistryUpsert(ctx, store.RegistryUpsertParams{AppName: "other", Address: "http://c:1", NowMs: t0}))
		live, err := st.RegistryList(ctx, store.RegistryListParams{AppName: "orders", SinceMs: t0})
		require.NoError(t, err)
		require.Len(t, live, 2)
		require.Equal(t, "http://a:9999", live[0].Address, "sorted by address")
		n, err := st.RegistryDeleteStale(ctx, t0+1)
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
		live, _ = st.RegistryList(ctx, store.RegistryListParams{})
		require.Equal(t, []store.Executor{{AppName: "orders", Address: "http://a:9999", UpdatedMs: t0 + 30_000}}, live)
		require.NoError(t, st.RegistryRemove(ctx, "orders", "http://a:9999"))
		live, _ = st.RegistryList(ctx, store.RegistryListParams{})
		require.Empty(t, live)

		v, err := st.SettingInit(ctx, "executor_token", "first", t0)
		require.NoError(t, err)
		require.Equal(t, "first", v)
		v, err = st.SettingInit(ctx, "executor_token", "second", t0)
		require.NoError(t, err)
		require.Equal(t, "first", v, "the first value stays")

		g, err := st.GroupCreate(ctx, store.GroupCreateParams{AppName: "orders", NowMs: t0})
		require.NoError(t, err)
		require.NoError(t, st.GroupSetExecutorSettings(ctx, g.ID, store.GroupExecutorSettings{AccessToken: "tok", Protocol: "3.5", AcceptRegistrations: true}))
		es, ok, err := st.GroupExecutorSettingsByApp(ctx, "orders")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, store.GroupExecutorSettings{AccessToken: "tok", Protocol: "3.5", AcceptRegistrations: true}, es)
		_, ok, err = st.GroupExecutorSettingsByApp(ctx, "nope")
		require.NoError(t, err)
		require.False(t, ok)
	})
}

func TestAcceptKeepsTargetOfAFastRun(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		j := mkJob(t, st, "j", t0)
		var ids []int64
		for i := 0; i < 2; i++ {
			r, _, err := st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: t0, TriggerType: kind.TriggerManual, Owner: "n", CreatedMs: t0})
			require.NoError(t, err)
			ids = append(ids, r.ID)
		}
		_, err := st.RunClaimBatch(ctx, store.RunClaimParams{IDs: ids, Owner: "n", NowMs: t0})
		require.NoError(t, err)
		// The first run finishes before its "accepted" is written.
		ok, err := st.RunRecordOutcomes(ctx, []store.RunResult{{ID: ids[0], State: kind.RunSucceeded, Code: 200, Message: "done", FinishedMs: t0 + 5, Source: store.SourceCallback}})
		require.NoError(t, err)
		require.Equal(t, []bool{true}, ok)
		require.NoError(t, st.RunAcceptBatch(ctx, []store.RunAccept{{ID: ids[0], Target: "local://a", Message: "accepted"}, {ID: ids[1], Target: "local://b", Message: "accepted"}}))
		a, _ := st.RunGet(ctx, ids[0])
		require.Equal(t, kind.RunSucceeded, a.State, "the outcome stays")
		require.Equal(t, "done", a.Message)
		require.Equal(t, "local://a", a.Target, "but the target is recorded")
		b, _ := st.RunGet(ctx, ids[1])
		require.Equal(t, kind.RunRunning, b.State)
		require.Equal(t, "accepted", b.Message)
		require.Equal(t, "local://b", b.Target)
	})
}

func TestConcurrentLogAppends(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		j := mkJob(t, st, "j", t0)
		var ids []int64
		for i := 0; i < 8; i++ {
			r, _, err := st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: t0, TriggerType: kind.TriggerManual, Owner: "n", CreatedMs: t0})
			require.NoError(t, err)
			ids = append(ids, r.ID)
		}
		errs := make(chan error, 8*20)
		var wg sync.WaitGroup
		for _, id := range ids {
			for k := 0; k < 20; k++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- st.RunLogAppend(ctx, id, "line")
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		for _, id := range ids {
			c, err := st.RunLogRead(ctx, id, 1)
			require.NoError(t, err)
			require.Equal(t, 20, c.ToLine, "no appended line lost")
		}
	})
}

func TestAcceptBatchSetsEachRunsOwnValues(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		j := mkJob(t, st, "j", t0)
		var ids []int64
		for i := 0; i < 5; i++ {
			r, _, err := st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: t0 + int64(i), TriggerType: kind.TriggerManual, Owner: "n", CreatedMs: t0})
			require.NoError(t, err)
			ids = append(ids, r.ID)
		}
		_, err := st.RunClaimBatch(ctx, store.RunClaimParams{IDs: ids, Owner: "n", NowMs: t0})
		require.NoError(t, err)
		targets := []string{"http://a:1", "http://a:1", "http://b:2", "http://a:1", "http://b:2"}
		var accepts []store.RunAccept
		for i, id := range ids {
			accepts = append(accepts, store.RunAccept{ID: id, Target: targets[i], Message: "accepted by " + targets[i]})
		}
		accepts[4].Message = "accepted late"
		require.NoError(t, st.RunAcceptBatch(ctx, accepts))
		for i, id := range ids {
			r, err := st.RunGet(ctx, id)
			require.NoError(t, err)
			require.Equal(t, kind.RunRunning, r.State)
			require.Equal(t, targets[i], r.Target, "run %d", i)
			require.Equal(t, accepts[i].Message, r.Message, "run %d", i)
		}
		// Every run of a batch to one executor: plain values.
		require.NoError(t, st.RunAcceptBatch(ctx, []store.RunAccept{{ID: ids[0], Target: "http://c:3", Message: "again"}, {ID: ids[1], Target: "http://c:3", Message: "again"}}))
		r, _ := st.RunGet(ctx, ids[1])
		require.Equal(t, "http://c:3", r.Target, "the target is always recorded")
		require.Equal(t, "accepted by http://a:1", r.Message, "the message only while dispatching")
	})
}
