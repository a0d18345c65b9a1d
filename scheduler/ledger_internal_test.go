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
	f := newWriterFixture(t)
	st, sent, now := f.st, f.handed, f.now
	state := func(id int64) kind.RunState { return f.run(id).State }
	w := newLedgerWriter(st, quietLog(), newSentTargets())
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
	f := newWriterFixture(t)
	st, now := f.st, f.now
	sentTo := newSentTargets()
	w := newLedgerWriter(st, quietLog(), sentTo)
	w.Start(ctx)
	t.Cleanup(func() { w.Stop(ctx) })
	send := func() int64 {
		id := f.handed()
		sentTo.put(id, "http://sent")
		return id
	}
	outcome := func(id int64) {
		applied, err := st.RunRecordOutcomes(ctx, []store.RunResult{{ID: id, State: kind.RunSucceeded, Code: 200, Target: "http://outcome", FinishedMs: now}})
		require.NoError(t, err)
		require.Equal(t, []bool{true}, applied)
	}
	accept := func(id int64) {
		w.write(ledgerOp{u: store.RunUpdate{ID: id, State: kind.RunRunning, Target: "http://accept", Message: "accepted"}})
	}
	target := func(id int64) string { return f.run(id).Target }

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

// writerFixture is a migrated SQLite store with one group and one job that
// never fires by itself, for the outcome writers' tests.
type writerFixture struct {
	t   *testing.T
	st  *store.Store
	g   store.Group
	j   store.Job
	now int64
}

func newWriterFixture(t *testing.T) *writerFixture {
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
	return &writerFixture{t: t, st: st, g: g, j: j, now: now}
}

// handed creates a run of the job and hands it off (dispatching), as a
// send does; it returns the run's id.
func (f *writerFixture) handed() int64 {
	f.t.Helper()
	ctx := context.Background()
	r, _, err := f.st.RunCreate(ctx, store.RunCreateParams{JobID: f.j.ID, GroupID: f.g.ID, ScheduledMs: f.now, ShardTotal: 1, TriggerType: kind.TriggerManual, Owner: "n", CreatedMs: f.now})
	require.NoError(f.t, err)
	ids, err := f.st.RunHandOff(ctx, store.RunHandOffParams{Owner: "n", IDs: []int64{r.ID}, NowMs: f.now})
	require.NoError(f.t, err)
	require.Len(f.t, ids, 1)
	return r.ID
}

// run reads run id back.
func (f *writerFixture) run(id int64) store.Run {
	f.t.Helper()
	r, err := f.st.RunGet(context.Background(), id)
	require.NoError(f.t, err)
	return r
}

// quietLog is a log entry that writes nothing.
func quietLog() *logrus.Entry {
	log := logrus.New()
	log.SetLevel(logrus.PanicLevel)
	return logrus.NewEntry(log)
}
