package reports_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/maintenance/reports"
	"github.com/ringjob/ringjob/store"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type env struct {
	t    *testing.T
	st   *store.Store
	jobs []store.Job // two jobs in group A, one in group B
}

func newEnv(t *testing.T, st *store.Store) *env {
	ctx := context.Background()
	e := &env{t: t, st: st}
	for i, app := range []string{"a", "a", "b"} {
		gs, err := st.GroupList(ctx)
		require.NoError(t, err)
		var gid int64
		for _, g := range gs {
			if g.AppName == app {
				gid = g.ID
			}
		}
		if gid == 0 {
			g, err := st.GroupCreate(ctx, store.GroupCreateParams{AppName: app, Members: []string{"noop://x"}, NowMs: t0.UnixMilli()})
			require.NoError(t, err)
			gid = g.ID
		}
		j, err := st.JobCreate(ctx, store.JobCreateParams{JobFields: store.JobFields{GroupID: gid, Name: "job" + string(rune('0'+i)), ScheduleType: "none",
			TimeZone: "UTC", MisfirePolicy: kind.MisfireDoNothing, ShardCount: 1}, NowMs: t0.UnixMilli()})
		require.NoError(t, err)
		e.jobs = append(e.jobs, j)
	}
	return e
}

// run makes a run of job j scheduled at at; a final state is reached after
// dispatch at at and end at at+took.
func (e *env) run(j int, at time.Time, state kind.RunState, took time.Duration) int64 {
	e.t.Helper()
	ctx := context.Background()
	job := e.jobs[j]
	r, _, err := e.st.RunCreate(ctx, store.RunCreateParams{JobID: job.ID, GroupID: job.GroupID, ScheduledMs: at.UnixMilli(), ShardTotal: 1,
		TriggerType: kind.TriggerManual, Owner: "n1", CreatedMs: at.UnixMilli()})
	require.NoError(e.t, err)
	if state == kind.RunScheduled {
		return r.ID
	}
	claimed, err := e.st.RunClaimBatch(ctx, store.RunClaimParams{IDs: []int64{r.ID}, Owner: "n1", NowMs: at.UnixMilli(), LateAfterMs: 1000})
	require.NoError(e.t, err)
	require.Len(e.t, claimed, 1)
	if state == kind.RunDispatching {
		return r.ID
	}
	e.finish(r.ID, state, at.Add(took))
	return r.ID
}

func (e *env) finish(id int64, state kind.RunState, at time.Time) {
	e.t.Helper()
	ok, err := e.st.RunRecordOutcomes(context.Background(), []store.RunResult{{ID: id, State: state, FinishedMs: at.UnixMilli(), Source: store.SourceCallback}})
	require.NoError(e.t, err)
	require.Equal(e.t, []bool{true}, ok)
}

func (e *env) query(res string, group, job int64, from, to time.Time) store.ReportRow {
	e.t.Helper()
	rows, err := e.st.ReportQuery(context.Background(), store.ReportQueryParams{Resolution: res, GroupID: group, JobID: job, FromMs: from.UnixMilli(), ToMs: to.UnixMilli()})
	require.NoError(e.t, err)
	var sum store.ReportRow
	for _, r := range rows {
		sum.Succeeded += r.Succeeded
		sum.Failed += r.Failed
		sum.TimedOut += r.TimedOut
		sum.Killed += r.Killed
		sum.Lost += r.Lost
		sum.Misfired += r.Misfired
		sum.DurationSumMs += r.DurationSumMs
		sum.DurationMaxMs = max(sum.DurationMaxMs, r.DurationMaxMs)
	}
	return sum
}

func newRollup(t *testing.T, st *store.Store, clock clockwork.Clock, node string) *reports.Rollup {
	r, err := reports.New(reports.Options{Store: st, Node: node, Clock: clock, Config: reports.Config{Settle: 30 * time.Second}})
	require.NoError(t, err)
	return r
}

func TestRollupCountsEachRunOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		e := newEnv(t, st)
		m0 := t0.Truncate(time.Hour)
		// Minute 0: job0 two successes (1s, 3s), a failure; job1 a timeout;
		// minute 1: job2 (group b) a success and a misfire.
		e.run(0, m0.Add(1*time.Second), kind.RunSucceeded, time.Second)
		e.run(0, m0.Add(2*time.Second), kind.RunSucceeded, 3*time.Second)
		e.run(0, m0.Add(3*time.Second), kind.RunFailed, 500*time.Millisecond)
		e.run(1, m0.Add(4*time.Second), kind.RunTimedOut, 10*time.Second)
		e.run(2, m0.Add(61*time.Second), kind.RunSucceeded, 2*time.Second)
		mis, _, err := st.RunCreate(ctx, store.RunCreateParams{JobID: e.jobs[2].ID, GroupID: e.jobs[2].GroupID, ScheduledMs: m0.Add(62 * time.Second).UnixMilli(),
			ShardTotal: 1, TriggerType: kind.TriggerSchedule, Owner: "n1", CreatedMs: m0.Add(62 * time.Second).UnixMilli()})
		require.NoError(t, err)
		_, err = st.RunSetState(ctx, mis.ID, kind.RunScheduled, kind.RunMisfired, "", m0.Add(68*time.Second).UnixMilli())
		require.NoError(t, err)
		// Long-running: dispatched in minute 1, still running 2 minutes later.
		long := e.run(1, m0.Add(70*time.Second), kind.RunDispatching, 0)

		clock := clockwork.NewFakeClockAt(m0.Add(3 * time.Minute))
		r := newRollup(t, st, clock, "n1")
		n, err := r.Tick(ctx)
		require.NoError(t, err)
		require.Equal(t, 6, n)

		all := e.query(store.ReportMinute, 0, 0, m0, m0.Add(time.Hour))
		require.Equal(t, store.ReportRow{Succeeded: 3, Failed: 1, TimedOut: 1, Misfired: 1, DurationSumMs: 1000 + 3000 + 500 + 10000 + 2000, DurationMaxMs: 10000}, all)
		first := e.query(store.ReportMinute, 0, 0, m0, m0.Add(time.Minute))
		require.Equal(t, int64(2), first.Succeeded)
		require.Equal(t, int64(1), first.TimedOut)
		groupA := e.query(store.ReportHour, e.jobs[0].GroupID, 0, m0, m0.Add(time.Hour))
		require.Equal(t, int64(2), groupA.Succeeded)
		require.Equal(t, int64(1), groupA.Failed)
		require.Equal(t, int64(1), groupA.TimedOut)
		job1 := e.query(store.ReportHour, e.jobs[1].GroupID, e.jobs[1].ID, m0, m0.Add(time.Hour))
		require.Equal(t, store.ReportRow{TimedOut: 1, DurationSumMs: 10000, DurationMaxMs: 10000}, job1)

		// Nothing new: nothing counted twice.
		n, err = r.Tick(ctx)
		require.NoError(t, err)
		require.Zero(t, n)

		// A young run still going holds the watermark back; the long run,
		// older than Settle, waits in pending and is counted when it ends.
		young := e.run(0, m0.Add(179*time.Second), kind.RunDispatching, 0)
		after := e.run(0, m0.Add(179*time.Second), kind.RunSucceeded, time.Second)
		n, err = r.Tick(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "the young run %d holds back %d", young, after)
		e.finish(young, kind.RunSucceeded, m0.Add(181*time.Second))
		e.finish(long, kind.RunLost, m0.Add(181*time.Second))
		n, err = r.Tick(ctx)
		require.NoError(t, err)
		require.Equal(t, 3, n, "young, after and the long run")
		all = e.query(store.ReportMinute, 0, 0, m0, m0.Add(time.Hour))
		require.Equal(t, int64(5), all.Succeeded)
		require.Equal(t, int64(1), all.Lost)
		pending, err := st.ReportPendingList(ctx, 10)
		require.NoError(t, err)
		require.Empty(t, pending)

		// Minute buckets go after minute_keep (2 days), hour buckets stay.
		clock.Advance(3 * 24 * time.Hour)
		_, err = r.Tick(ctx)
		require.NoError(t, err)
		require.Equal(t, store.ReportRow{}, e.query(store.ReportMinute, 0, 0, m0, m0.Add(time.Hour)))
		require.Equal(t, int64(5), e.query(store.ReportHour, 0, 0, m0, m0.Add(time.Hour)).Succeeded)
	})
}

// TestRollupRacingReplicas: two replicas stepping at once (as when a lease
// expires under a slow roll-up) still count every run exactly once.
func TestRollupRacingReplicas(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		e := newEnv(t, st)
		m0 := t0.Truncate(time.Hour)
		const runs = 40
		for i := 0; i < runs; i++ {
			e.run(i%3, m0.Add(time.Duration(i)*time.Second), kind.RunSucceeded, time.Second)
		}
		clock := clockwork.NewFakeClockAt(m0.Add(time.Hour))
		var wg sync.WaitGroup
		for _, node := range []string{"n1", "n2", "n3"} {
			r := newRollup(t, st, clock, node)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 5; i++ {
					_, _, err := r.Step(ctx)
					if err != nil {
						require.ErrorIs(t, err, store.ErrReportMarkMoved)
					}
				}
			}()
		}
		wg.Wait()
		require.Equal(t, int64(runs), e.query(store.ReportMinute, 0, 0, m0, m0.Add(time.Hour)).Succeeded)
		require.Equal(t, int64(runs), e.query(store.ReportHour, 0, 0, m0, m0.Add(time.Hour)).Succeeded)
	})
}

// TestRollupTickWritesEachBucketOnce: a tick that reads several batches of
// runs applies them as one step (the mark moves once), so a bucket is
// written once per tick however many batches its runs came in, and every
// run is still counted once.
func TestRollupTickWritesEachBucketOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		e := newEnv(t, st)
		m0 := t0.Truncate(time.Hour)
		const runs = 12_345 // three reads of 5,000
		for start := 0; start < runs; start += 500 {
			var vals []string
			var args []any
			for i := start; i < min(start+500, runs); i++ {
				j := e.jobs[i%3]
				at := m0.Add(time.Duration(i) * 100 * time.Millisecond).UnixMilli()
				state := kind.RunSucceeded
				if i%100 == 0 {
					state = kind.RunFailed
				}
				vals = append(vals, "(?, ?, ?, 0, 1, 0, 'manual', ?, 'n1', '', ?, ?, ?, '')")
				args = append(args, j.ID, j.GroupID, at, state, at, at, at+10)
			}
			_, err := st.DB().ExecContext(ctx, "INSERT INTO runs (job_id, group_id, scheduled_ms, shard_index, shard_total, attempt, trigger_type, state, owner, params, created_ms, dispatched_ms, finished_ms, message) VALUES "+
				strings.Join(vals, ","), args...)
			require.NoError(t, err)
		}
		r := newRollup(t, st, clockwork.NewFakeClockAt(m0.Add(3*time.Hour)), "n1")
		n, err := r.Tick(ctx)
		require.NoError(t, err)
		require.Equal(t, runs, n)
		mark, err := st.ReportMarkGet(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1), mark.Seq, "one step for the whole tick")
		all := e.query(store.ReportHour, 0, 0, m0, m0.Add(time.Hour))
		require.Equal(t, store.ReportRow{Succeeded: runs - runs/100 - 1, Failed: runs/100 + 1, DurationSumMs: 10 * runs, DurationMaxMs: 10}, all)
		byMinute := e.query(store.ReportMinute, e.jobs[2].GroupID, e.jobs[2].ID, m0, m0.Add(time.Hour))
		require.Equal(t, int64(runs/3), byMinute.Succeeded+byMinute.Failed)
		n, err = r.Tick(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "nothing counted twice")
	})
}
