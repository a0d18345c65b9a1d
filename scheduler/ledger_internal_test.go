package scheduler

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/store"
)

// TestLedgerOutcomesYieldToHandOffs: while runs wait for their hand-off
// (sends wait on the database), the ledger holds the outcomes it has,
// however many writes' worth, and writes them once the hand-offs are
// through; a flush (Stop) never waits.
func TestLedgerOutcomesYieldToHandOffs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, g, j, now := ledgerTestJob(t)
	sent := func() int64 {
		r, _, err := st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: g.ID, ScheduledMs: now, ShardTotal: 1, TriggerType: kind.TriggerManual, Owner: "n", CreatedMs: now})
		require.NoError(t, err)
		ids, err := st.RunHandOff(ctx, store.RunHandOffParams{Owner: "n", IDs: []int64{r.ID}, NowMs: now})
		require.NoError(t, err)
		require.Len(t, ids, 1)
		return r.ID
	}
	state := func(id int64) kind.RunState {
		r, err := st.RunGet(ctx, id)
		require.NoError(t, err)
		return r.State
	}
	log := logrus.New()
	log.SetLevel(logrus.PanicLevel)
	w := newLedgerWriter(st, logrus.NewEntry(log), newSentTargets())
	w.yieldMax = time.Hour // only the hand-offs end the wait here
	w.batch = 2            // five outcomes are three writes' worth
	var handing atomic.Bool
	w.urgent = handing.Load
	w.Start(ctx)
	t.Cleanup(func() { w.Stop(ctx) })

	handing.Store(true)
	var held []int64
	for range 5 {
		id := sent()
		held = append(held, id)
		w.write(ledgerOp{final: true, u: store.RunUpdate{ID: id, State: kind.RunSucceeded, Code: 200, FinishedMs: now}})
	}
	require.Eventually(t, func() bool { return len(w.in) == 0 }, 5*time.Second, time.Millisecond, "the writer takes the outcomes")
	time.Sleep(100 * time.Millisecond) // past the linger: they would be written by now
	for _, id := range held {
		require.Equal(t, kind.RunDispatching, state(id), "run %d: held while runs wait for their hand-off", id)
	}

	handing.Store(false)
	for _, id := range held {
		require.Eventually(t, func() bool { return state(id) == kind.RunSucceeded }, 5*time.Second, 5*time.Millisecond, "run %d: written once the hand-offs are through", id)
	}

	handing.Store(true)
	second := sent()
	w.write(ledgerOp{final: true, u: store.RunUpdate{ID: second, State: kind.RunFailed, Code: 500, FinishedMs: now}})
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	w.flush(fctx)
	require.NoError(t, fctx.Err(), "a flush does not wait for the hand-offs")
	require.Equal(t, kind.RunFailed, state(second))
}

// TestLedgerAcceptAfterOutcome: an accept that reaches the ledger after its
// run's outcome was recorded (the ledger's batches linger and yield, an
// executor's callback does not) writes nothing, and a held accept waits
// while its run's outcome is being written: dropped when that write
// commits, written when it fails. The accepts here name another target
// than the outcome, so that a write shows.
func TestLedgerAcceptAfterOutcome(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, g, j, now := ledgerTestJob(t)
	sentTo := newSentTargets()
	log := logrus.New()
	log.SetLevel(logrus.PanicLevel)
	w := newLedgerWriter(st, logrus.NewEntry(log), sentTo)
	w.Start(ctx)
	t.Cleanup(func() { w.Stop(ctx) })
	send := func() int64 {
		r, _, err := st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: g.ID, ScheduledMs: now, ShardTotal: 1, TriggerType: kind.TriggerManual, Owner: "n", CreatedMs: now})
		require.NoError(t, err)
		ids, err := st.RunHandOff(ctx, store.RunHandOffParams{Owner: "n", IDs: []int64{r.ID}, NowMs: now})
		require.NoError(t, err)
		require.Len(t, ids, 1)
		sentTo.put(r.ID, "http://sent")
		return r.ID
	}
	outcome := func(id int64) {
		applied, err := st.RunRecordOutcomes(ctx, []store.RunResult{{ID: id, State: kind.RunSucceeded, Code: 200, Target: "http://outcome", FinishedMs: now}})
		require.NoError(t, err)
		require.Equal(t, []bool{true}, applied)
	}
	accept := func(id int64) {
		w.write(ledgerOp{u: store.RunUpdate{ID: id, State: kind.RunRunning, Target: "http://accept", Message: "accepted"}})
	}
	target := func(id int64) string {
		r, err := st.RunGet(ctx, id)
		require.NoError(t, err)
		return r.Target
	}

	// The outcome first (committed, settled), its accept after.
	late := send()
	w.outcomesWriting([]int64{late})
	outcome(late)
	w.outcomesWritten([]int64{late}, true)
	accept(late)

	// The accept first, held while its outcome is written, then dropped.
	dropped := send()
	accept(dropped)
	w.outcomesWriting([]int64{dropped})

	// The accept first, held while its outcome is written, which fails:
	// then the accept is written.
	failed := send()
	accept(failed)
	w.outcomesWriting([]int64{failed})

	time.Sleep(3 * acceptHold) // the held accepts are due
	require.Equal(t, "http://outcome", target(late), "an accept after the outcome writes nothing")
	require.Empty(t, target(dropped), "a held accept waits while its outcome is written")
	require.Empty(t, target(failed), "a held accept waits while its outcome is written")

	outcome(dropped)
	w.outcomesWritten([]int64{dropped}, true)
	w.outcomesWritten([]int64{failed}, false)
	require.Eventually(t, func() bool { return target(failed) == "http://accept" }, 5*time.Second, 5*time.Millisecond,
		"the accept is written once its outcome's write failed")
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	w.flush(fctx)
	require.Equal(t, "http://outcome", target(dropped), "the held accept is dropped once its outcome is recorded")
	require.Equal(t, "http://outcome", target(late))
}

// ledgerTestJob is a migrated SQLite store with one group and one job that
// never fires by itself, and the time the ledger tests run at.
func ledgerTestJob(t *testing.T) (*store.Store, store.Group, store.Job, int64) {
	t.Helper()
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, dbtest.SQLitePath(t))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC).UnixMilli()
	g, err := st.GroupCreate(ctx, store.GroupCreateParams{AppName: "app", NowMs: now})
	require.NoError(t, err)
	j, err := st.JobCreate(ctx, store.JobCreateParams{JobFields: store.JobFields{GroupID: g.ID, Name: "j", ScheduleType: "none", TimeZone: "UTC",
		MisfirePolicy: kind.MisfireDoNothing, RouteStrategy: "first", BlockStrategy: "SERIAL_EXECUTION", ShardCount: 1}, Enabled: true, NowMs: now})
	require.NoError(t, err)
	return st, g, j, now
}
