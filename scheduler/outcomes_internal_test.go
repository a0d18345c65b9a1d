package scheduler

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/store"
)

// TestOutcomeWriterYieldsToHandOffs: while runs wait for their hand-off,
// outcomes reported from outside (an executor's callback) are held and
// their reporters wait; they are written, and answered, once the hand-offs
// are through, or after yieldMax if they never are.
func TestOutcomeWriterYieldsToHandOffs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newWriterFixture(t)
	st, sent, now, j := f.st, f.handed, f.now, f.j
	state := func(id int64) kind.RunState { return f.run(id).State }
	start := func(most time.Duration, urgent func() bool) *outcomeWriter {
		w := newOutcomeWriter(st, quietLog(), NewMetrics(nil))
		w.yieldMax = most
		w.urgent = urgent
		w.Start(ctx)
		t.Cleanup(w.Stop)
		return w
	}
	type answer struct {
		applied []bool
		err     error
	}
	report := func(w *outcomeWriter, id int64) chan answer {
		ch := make(chan answer, 1)
		go func() {
			applied, err := w.record(ctx, []store.RunResult{{ID: id, State: kind.RunSucceeded, Code: 200, FinishedMs: now, JobID: j.ID, Source: store.SourceCallback}})
			ch <- answer{applied, err}
		}()
		return ch
	}

	var handing atomic.Bool
	handing.Store(true)
	w := start(time.Hour, handing.Load) // only the hand-offs end the wait here
	var ids []int64
	var answers []chan answer
	for range 3 {
		id := sent()
		ids = append(ids, id)
		answers = append(answers, report(w, id))
	}
	time.Sleep(100 * time.Millisecond)
	for i, id := range ids {
		require.Equal(t, kind.RunDispatching, state(id), "run %d: held while runs wait for their hand-off", id)
		select {
		case a := <-answers[i]:
			t.Fatalf("run %d: its reporter was answered (%v, %v) before the outcome was written", id, a.applied, a.err)
		default:
		}
	}
	handing.Store(false)
	for i, id := range ids {
		select {
		case a := <-answers[i]:
			require.NoError(t, a.err)
			require.Equal(t, []bool{true}, a.applied)
		case <-time.After(5 * time.Second):
			t.Fatalf("run %d: not answered once the hand-offs were through", id)
		}
		require.Equal(t, kind.RunSucceeded, state(id))
	}

	// Hand-offs that never end hold an outcome for yieldMax only.
	always := start(50*time.Millisecond, func() bool { return true })
	id := sent()
	select {
	case a := <-report(always, id):
		require.NoError(t, a.err)
		require.Equal(t, []bool{true}, a.applied)
	case <-time.After(5 * time.Second):
		t.Fatal("an outcome was held past yieldMax")
	}
	require.Equal(t, kind.RunSucceeded, state(id))
}

// TestPoolHandingUntilHandOffDecided: a pool counts as handing from the
// moment a run is queued until its hand-off is decided, whatever the
// decision; a run being sent no longer counts.
func TestPoolHandingUntilHandOffDecided(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := newPool("test", PoolConfig{Workers: 2, Queue: 4})
	p.Start(ctx)
	require.False(t, p.handing(), "an empty pool")
	require.Equal(t, 2, p.reserve(2))
	decide, sending, release := make(chan bool), make(chan struct{}, 2), make(chan struct{})
	for range 2 {
		p.submit(func(ctx context.Context, tr *turn) {
			require.NoError(t, tr.admit(ctx))
			handed := <-decide
			tr.pass(handed)
			sending <- struct{}{}
			<-release
		})
	}
	require.True(t, p.handing(), "runs queued for their hand-off")
	decide <- true
	<-sending
	require.True(t, p.handing(), "one run still waits for its hand-off")
	decide <- false
	<-sending
	require.False(t, p.handing(), "both hand-offs decided (one handed, one not): nothing waits for the database")
	close(release)
	p.Stop(clockwork.NewRealClock(), 5*time.Second)
}
