package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/store"
)

// A kill is claimed once, a result reported while it is in flight is held,
// and the kill's answer (or its expiry) decides what the result means;
// exactly one settling applies.
func TestKillClaimHoldSettle(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		j := mkJob(t, st, "kills", 0)
		running := func() int64 { return mkRunning(t, st, j) }
		result := func(id int64, state kind.RunState, code int, msg string) store.RunResult {
			return store.RunResult{ID: id, State: state, Code: code, Message: msg, FinishedMs: t0 + 50, Source: store.SourceCallback}
		}
		get := func(id int64) store.Run {
			t.Helper()
			r, err := st.RunGet(ctx, id)
			require.NoError(t, err)
			return r
		}
		log := func(id int64) string {
			t.Helper()
			c, err := st.RunLogRead(ctx, id, 1)
			require.NoError(t, err)
			return c.Content
		}

		t.Run("claimed once, for the run and those it stops", func(t *testing.T) {
			a, b := running(), running()
			claimed, err := st.RunKillClaim(ctx, []int64{a, b}, t0+10_000)
			require.NoError(t, err)
			require.Equal(t, []int64{a, b}, claimed)
			require.True(t, get(a).KillRequested)
			require.True(t, get(b).KillRequested)
			_, err = st.RunKillClaim(ctx, []int64{b}, t0+10_000)
			require.ErrorIs(t, err, store.ErrKillInFlight, "a kill of b is in flight with a's")
			_, err = st.RunKillClaim(ctx, []int64{a}, t0+10_000)
			require.ErrorIs(t, err, store.ErrKillInFlight)
			_, err = st.RunKillSettle(ctx, []int64{a, b}, []store.RunResult{store.KilledResult(a, t0), store.KilledResult(b, t0)})
			require.NoError(t, err)
			require.Equal(t, kind.RunKilled, get(a).State)
			claimed, err = st.RunKillClaim(ctx, []int64{a}, t0+10_000)
			require.NoError(t, err)
			require.Empty(t, claimed, "a run that has ended is not claimed")
		})

		t.Run("accepted: killed, the held result logged", func(t *testing.T) {
			id := running()
			held, err := st.RunKillHold(ctx, result(id, kind.RunSucceeded, 200, "stopped"))
			require.NoError(t, err)
			require.False(t, held, "no kill in flight: the result is the run's to record")
			_, err = st.RunKillClaim(ctx, []int64{id}, t0+10_000)
			require.NoError(t, err)
			held, err = st.RunKillHold(ctx, result(id, kind.RunSucceeded, 200, "stopped"))
			require.NoError(t, err)
			require.True(t, held)
			held, err = st.RunKillHold(ctx, result(id, kind.RunFailed, 500, "second report"))
			require.NoError(t, err)
			require.True(t, held, "a second report while one is held is only logged")
			require.False(t, get(id).State.Final(), "nothing recorded until the kill's answer")
			settled, err := st.RunKillSettle(ctx, []int64{id}, []store.RunResult{store.KilledResult(id, t0+100)})
			require.NoError(t, err)
			require.Len(t, settled, 1)
			require.Equal(t, kind.RunKilled, settled[0].State)
			require.NotNil(t, settled[0].Held)
			require.Equal(t, kind.RunSucceeded, settled[0].Held.State)
			r := get(id)
			require.Equal(t, kind.RunKilled, r.State)
			require.Contains(t, log(id), "ignored a later outcome from the executor callback: succeeded (code 200): stopped; the run had already ended as killed")
			require.Contains(t, log(id), "second report")
			held, err = st.RunKillHold(ctx, result(id, kind.RunSucceeded, 200, "late"))
			require.NoError(t, err)
			require.False(t, held, "the kill is settled")
		})

		t.Run("refused: the held result recorded as it came", func(t *testing.T) {
			id := running()
			_, err := st.RunKillClaim(ctx, []int64{id}, t0+10_000)
			require.NoError(t, err)
			held, err := st.RunKillHold(ctx, result(id, kind.RunFailed, 500, "ended on its own"))
			require.NoError(t, err)
			require.True(t, held)
			settled, err := st.RunKillSettle(ctx, []int64{id}, nil)
			require.NoError(t, err)
			require.Equal(t, kind.RunFailed, settled[0].State)
			r := get(id)
			require.Equal(t, kind.RunFailed, r.State)
			require.Equal(t, 500, r.ResultCode)
			require.Equal(t, "ended on its own", r.Message)
			require.Equal(t, t0+50, r.FinishedMs, "finished when it was reported")
			fs, err := st.RunListFollowups(ctx, []kind.RunState{kind.RunFailed}, 100)
			require.NoError(t, err)
			require.Contains(t, runIDsOf(fs), id, "a failure so recorded is followed up (retried, alarmed) like any other")
			// Settled twice (a second decision): nothing more happens.
			settled, err = st.RunKillSettle(ctx, []int64{id}, []store.RunResult{store.KilledResult(id, t0+200)})
			require.NoError(t, err)
			require.Equal(t, kind.RunFailed, settled[0].State, "the first decision stands")
		})

		t.Run("refused with nothing held: the run goes on, its result counts", func(t *testing.T) {
			id := running()
			_, err := st.RunKillClaim(ctx, []int64{id}, t0+10_000)
			require.NoError(t, err)
			settled, err := st.RunKillSettle(ctx, []int64{id}, nil)
			require.NoError(t, err)
			require.False(t, settled[0].State.Final())
			require.Nil(t, settled[0].Held)
			require.False(t, get(id).KillRequested)
			held, err := st.RunKillHold(ctx, result(id, kind.RunSucceeded, 200, "done"))
			require.NoError(t, err)
			require.False(t, held)
		})

		t.Run("expired: settled as not accepted, once, after the deadline only", func(t *testing.T) {
			id, quiet := running(), running()
			_, err := st.RunKillClaim(ctx, []int64{id}, t0+10_000)
			require.NoError(t, err)
			_, err = st.RunKillClaim(ctx, []int64{quiet}, t0+10_000)
			require.NoError(t, err)
			held, err := st.RunKillHold(ctx, result(id, kind.RunSucceeded, 200, "done"))
			require.NoError(t, err)
			require.True(t, held)
			settled, err := st.RunKillSettleExpired(ctx, t0+9_999, 100)
			require.NoError(t, err)
			require.Empty(t, settled, "not before the deadline")
			settled, err = st.RunKillSettleExpired(ctx, t0+10_001, 100)
			require.NoError(t, err)
			require.Len(t, settled, 2)
			require.Equal(t, kind.RunSucceeded, get(id).State)
			require.False(t, get(quiet).State.Final())
			require.False(t, get(quiet).KillRequested)
			settled, err = st.RunKillSettleExpired(ctx, t0+10_001, 100)
			require.NoError(t, err)
			require.Empty(t, settled, "settled once")
			// The sender's late answer (accepted) still kills a run that
			// goes on; one that ended keeps its outcome.
			settled, err = st.RunKillSettle(ctx, []int64{id, quiet}, []store.RunResult{store.KilledResult(id, t0+20_000), store.KilledResult(quiet, t0+20_000)})
			require.NoError(t, err)
			require.Equal(t, kind.RunSucceeded, settled[0].State)
			require.Equal(t, kind.RunKilled, settled[1].State)
		})
	})
}

func runIDsOf(rs []store.Run) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

// A result held at the same moment as the kill is settled is never lost:
// either it was held before the settling (which then records or logs it),
// or the hold finds no kill and the result is the caller's to record.
func TestKillHoldRacesSettle(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		j := mkJob(t, st, "kill-race", 0)
		for i := range 30 {
			r, _, err := st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: t0 + int64(i), TriggerType: kind.TriggerManual,
				Owner: "n", CreatedMs: t0})
			require.NoError(t, err)
			_, err = st.RunClaimBatch(ctx, store.RunClaimParams{IDs: []int64{r.ID}, Owner: "n", NowMs: t0})
			require.NoError(t, err)
			_, err = st.RunKillClaim(ctx, []int64{r.ID}, t0+10_000)
			require.NoError(t, err)
			accepted := i%2 == 0
			var killed []store.RunResult
			if accepted {
				killed = []store.RunResult{store.KilledResult(r.ID, t0+100)}
			}
			res := store.RunResult{ID: r.ID, State: kind.RunSucceeded, Code: 200, Message: "done", FinishedMs: t0 + 50, Source: store.SourceCallback}
			type holdResult struct {
				held bool
				err  error
			}
			heldc := make(chan holdResult, 1)
			go func() {
				held, err := st.RunKillHold(ctx, res)
				heldc <- holdResult{held, err}
			}()
			_, err = st.RunKillSettle(ctx, []int64{r.ID}, killed)
			require.NoError(t, err)
			h := <-heldc
			require.NoError(t, h.err)
			if !h.held {
				// What the callback does when no kill holds its result.
				_, err := st.RunRecordOutcomes(ctx, []store.RunResult{res})
				require.NoError(t, err)
			}
			got, err := st.RunGet(ctx, r.ID)
			require.NoError(t, err)
			if accepted {
				require.Equal(t, kind.RunKilled, got.State, "run %d", r.ID)
				c, err := st.RunLogRead(ctx, r.ID, 1)
				require.NoError(t, err)
				require.Contains(t, c.Content, "ignored a later outcome from the executor callback: succeeded (code 200): done", "run %d", r.ID)
			} else {
				require.Equal(t, kind.RunSucceeded, got.State, "run %d: the result came and the kill was refused", r.ID)
			}
		}
	})
}

// A callback's read of its runs gives what the full read gives for the
// columns it holds: the run's job, group, state, target and a kill in
// flight; unknown ids are left out.
func TestRunGetForCallback(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		j := mkJob(t, st, "callback-view", 0)
		var ids []int64
		for range 3 {
			r, _, err := st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: t0, TriggerType: kind.TriggerManual,
				Owner: "n", CreatedMs: t0})
			require.NoError(t, err)
			ids = append(ids, r.ID)
		}
		_, err := st.RunClaimBatch(ctx, store.RunClaimParams{IDs: ids[:2], Owner: "n", NowMs: t0})
		require.NoError(t, err)
		_, err = st.RunKillClaim(ctx, ids[1:2], t0+10_000)
		require.NoError(t, err)
		views, err := st.RunGetForCallback(ctx, append(ids, 1<<40))
		require.NoError(t, err)
		full, err := st.RunGetMany(ctx, ids)
		require.NoError(t, err)
		require.Len(t, views, len(full), "an unknown id is left out")
		byID := map[int64]store.Run{}
		for _, r := range full {
			byID[r.ID] = r
		}
		for _, v := range views {
			r := byID[v.ID]
			require.Equal(t, store.RunCallbackView{ID: r.ID, JobID: r.JobID, GroupID: r.GroupID, ScheduledMs: r.ScheduledMs, State: r.State,
				Target: r.Target, KillRequested: r.KillRequested}, v)
		}
		require.True(t, byID[ids[1]].KillRequested, "the kill in flight is seen")
		require.Equal(t, kind.RunScheduled, byID[ids[2]].State)
	})
}
