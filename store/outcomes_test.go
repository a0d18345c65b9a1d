package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/store"
)

func TestRecordOutcomes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		j := mkJob(t, st, "outcomes", 0)
		running := func(followSuccess bool) store.Run {
			t.Helper()
			r, _, err := st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: t0, TriggerType: kind.TriggerManual,
				Owner: "n", CreatedMs: t0, FollowSuccess: followSuccess})
			require.NoError(t, err)
			_, err = st.RunClaimBatch(ctx, store.RunClaimParams{IDs: []int64{r.ID}, Owner: "n", NowMs: t0})
			require.NoError(t, err)
			return r
		}
		pending := func(states ...kind.RunState) []int64 {
			t.Helper()
			rs, err := st.RunListFollowups(ctx, states, 100)
			require.NoError(t, err)
			var ids []int64
			for _, r := range rs {
				ids = append(ids, r.ID)
			}
			return ids
		}

		t.Run("the first final outcome wins and a later one is logged on the run", func(t *testing.T) {
			r := running(false)
			applied, err := st.RunRecordOutcomes(ctx, []store.RunResult{store.KilledResult(r.ID, t0+1)})
			require.NoError(t, err)
			require.Equal(t, []bool{true}, applied)
			applied, err = st.RunRecordOutcomes(ctx, []store.RunResult{{ID: r.ID, State: kind.RunSucceeded, Code: 200, Message: "task done",
				FinishedMs: t0 + 2, Source: store.SourceCallback}})
			require.NoError(t, err)
			require.Equal(t, []bool{false}, applied)
			got, err := st.RunGet(ctx, r.ID)
			require.NoError(t, err)
			require.Equal(t, kind.RunKilled, got.State)
			require.Equal(t, 500, got.ResultCode)
			require.Equal(t, t0+1, got.FinishedMs)
			log, err := st.RunLogRead(ctx, r.ID, 1)
			require.NoError(t, err)
			require.Contains(t, log.Content, "ignored a later outcome from the executor callback: succeeded (code 200): task done; the run had already ended as killed")
		})

		t.Run("lost applies only to a run still dispatching; one its target accepted keeps running", func(t *testing.T) {
			stuck, accepted := running(false), running(false)
			require.NoError(t, st.RunAcceptBatch(ctx, []store.RunAccept{{ID: accepted.ID, Target: "http://exec:9999", Message: "accepted"}}))
			lost := func(id int64) store.RunResult {
				return store.RunResult{ID: id, State: kind.RunLost, Code: 500, Message: "node died", FinishedMs: t0 + 3, Source: store.SourceLost, OnlyDispatching: true}
			}
			applied, err := st.RunRecordOutcomes(ctx, []store.RunResult{lost(stuck.ID), lost(accepted.ID)})
			require.NoError(t, err)
			require.Equal(t, []bool{true, false}, applied)
			got, err := st.RunGet(ctx, stuck.ID)
			require.NoError(t, err)
			require.Equal(t, kind.RunLost, got.State)
			require.Contains(t, pending(kind.RunLost), stuck.ID, "a lost run arms its retry and alarm in the same write")
			got, err = st.RunGet(ctx, accepted.ID)
			require.NoError(t, err)
			require.Equal(t, kind.RunRunning, got.State)
			log, err := st.RunLogRead(ctx, accepted.ID, 1)
			require.NoError(t, err)
			require.Contains(t, log.Content, "ignored a later outcome from the lost-run check: lost (code 500): node died; the run was running")
		})

		t.Run("a batch records many runs in one write, each compare-and-set", func(t *testing.T) {
			a, b, c := running(false), running(false), running(false)
			_, err := st.RunRecordOutcomes(ctx, []store.RunResult{{ID: c.ID, State: kind.RunFailed, Code: 500, FinishedMs: t0 + 5}})
			require.NoError(t, err)
			applied, err := st.RunRecordOutcomes(ctx, []store.RunResult{
				{ID: a.ID, State: kind.RunSucceeded, Code: 200, FinishedMs: t0 + 9, Target: "http://10.0.0.9:9999"},
				{ID: b.ID, State: kind.RunTimedOut, Code: 502, Message: "timeout", FinishedMs: t0 + 9},
				{ID: c.ID, State: kind.RunSucceeded, Code: 200, FinishedMs: t0 + 9},
				{ID: a.ID, State: kind.RunFailed, Code: 500, FinishedMs: t0 + 9}, // second in the same batch: late
			})
			require.NoError(t, err)
			require.Equal(t, []bool{true, true, false, false}, applied)
			rs, err := st.RunGetMany(ctx, []int64{a.ID, b.ID, c.ID})
			require.NoError(t, err)
			states := map[int64]kind.RunState{}
			for _, r := range rs {
				states[r.ID] = r.State
			}
			require.Equal(t, map[int64]kind.RunState{a.ID: kind.RunSucceeded, b.ID: kind.RunTimedOut, c.ID: kind.RunFailed}, states)
			ra, _ := st.RunGet(ctx, a.ID)
			require.Equal(t, "http://10.0.0.9:9999", ra.Target)
		})

		t.Run("follow-ups: failures always, successes only when armed at creation", func(t *testing.T) {
			plain, armed, failed, killed := running(false), running(true), running(true), running(true)
			before := pending(kind.RunSucceeded)
			_, err := st.RunRecordOutcomes(ctx, []store.RunResult{
				{ID: plain.ID, State: kind.RunSucceeded, Code: 200, FinishedMs: t0},
				{ID: armed.ID, State: kind.RunSucceeded, Code: 200, FinishedMs: t0},
				{ID: failed.ID, State: kind.RunFailed, Code: 500, FinishedMs: t0},
				store.KilledResult(killed.ID, t0),
			})
			require.NoError(t, err)
			require.Equal(t, append(before, armed.ID), pending(kind.RunSucceeded))
			require.Contains(t, pending(store.FailedStates...), failed.ID)
			require.NotContains(t, pending(kind.RunKilled), killed.ID)

			done, err := st.RunFollowupDone(ctx, armed.ID)
			require.NoError(t, err)
			require.True(t, done)
			done, err = st.RunFollowupDone(ctx, armed.ID)
			require.NoError(t, err)
			require.False(t, done, "done once")
			require.NotContains(t, pending(kind.RunSucceeded), armed.ID)
		})

		t.Run("a state that is not final is refused", func(t *testing.T) {
			r := running(false)
			_, err := st.RunRecordOutcomes(ctx, []store.RunResult{{ID: r.ID, State: kind.RunRunning}})
			require.ErrorContains(t, err, `state "running" is not final`)
		})
	})
}
