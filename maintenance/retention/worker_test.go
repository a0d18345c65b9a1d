package retention_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/maintenance/retention"
	"github.com/ringjob/ringjob/store"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

const day = 24 * time.Hour

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixture makes runs in given states at given times.
type fixture struct {
	t   *testing.T
	st  *store.Store
	job map[string]store.Job
}

func newFixture(t *testing.T, st *store.Store, groups ...string) *fixture {
	f := &fixture{t: t, st: st, job: map[string]store.Job{}}
	ctx := context.Background()
	for _, app := range groups {
		g, err := st.GroupCreate(ctx, store.GroupCreateParams{AppName: app, Members: []string{"noop://x"}, NowMs: t0.UnixMilli()})
		require.NoError(t, err)
		j, err := st.JobCreate(ctx, store.JobCreateParams{JobFields: store.JobFields{GroupID: g.ID, Name: "job-" + app, ScheduleType: "none",
			TimeZone: "UTC", MisfirePolicy: kind.MisfireDoNothing, ShardCount: 1}, NowMs: t0.UnixMilli()})
		require.NoError(t, err)
		f.job[app] = j
	}
	return f
}

type runSpec struct {
	group    string
	at       time.Time // created, scheduled and (when final) finished
	state    kind.RunState
	followup bool   // for a failure: its follow-up is done
	retryOf  int64  // the run this one retries
	key      string // idempotency key
	log      string
}

func (f *fixture) run(s runSpec) int64 {
	f.t.Helper()
	ctx := context.Background()
	j := f.job[s.group]
	ms := s.at.UnixMilli()
	r, _, err := f.st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: ms, ShardTotal: 1,
		TriggerType: kind.TriggerManual, Owner: "n1", RetryOf: s.retryOf, IdempotencyKey: s.key, CreatedMs: ms})
	require.NoError(f.t, err)
	if s.state != kind.RunScheduled {
		ok, err := f.st.RunSetState(ctx, r.ID, kind.RunScheduled, s.state, "", ms+1000)
		require.NoError(f.t, err)
		require.True(f.t, ok)
	}
	if s.followup {
		ok, err := f.st.RunFollowupDone(ctx, r.ID)
		require.NoError(f.t, err)
		require.True(f.t, ok)
	}
	if s.log != "" {
		require.NoError(f.t, f.st.RunLogAppend(ctx, r.ID, s.log))
	}
	return r.ID
}

func (f *fixture) exists(id int64) bool {
	_, err := f.st.RunGet(context.Background(), id)
	if err != nil {
		require.ErrorIs(f.t, err, store.ErrNotFound)
		return false
	}
	return true
}

func (f *fixture) hasLog(id int64) bool {
	var n int
	require.NoError(f.t, f.st.DB().QueryRow("SELECT COUNT(*) FROM run_logs WHERE run_id = ?", id).Scan(&n))
	return n > 0
}

func newWorker(t *testing.T, st *store.Store, clock clockwork.Clock, node string, cfg retention.Config, countedOnly bool) *retention.Worker {
	cfg.BatchSize = 3 // several batches even with a handful of runs
	cfg.Pause = time.Millisecond
	cfg.DropGap = time.Millisecond
	w, err := retention.New(retention.Options{Config: cfg, Store: st, Node: node, Clock: clock, CountedOnly: countedOnly})
	require.NoError(t, err)
	return w
}

// TestRetentionKeepsNeededRuns: every kind of run that is still needed
// survives a purge however old it is; finished runs past their retention go
// with their logs; logs go earlier when retention.logs is shorter; a group
// override keeps its runs longer.
func TestRetentionKeepsNeededRuns(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		f := newFixture(t, st, "app", "audit")
		old := t0
		now := t0.Add(40 * day)

		oldDone := f.run(runSpec{group: "app", at: old, state: kind.RunSucceeded, log: "done\n"})
		running := f.run(runSpec{group: "app", at: old, state: kind.RunRunning, log: "still going\n"})
		scheduled := f.run(runSpec{group: "app", at: old, state: kind.RunScheduled})
		failedPending := f.run(runSpec{group: "app", at: old, state: kind.RunFailed})
		failedDone := f.run(runSpec{group: "app", at: old, state: kind.RunFailed, followup: true})
		retried := f.run(runSpec{group: "app", at: old, state: kind.RunFailed, followup: true})
		parent := f.run(runSpec{group: "app", at: old, state: kind.RunSucceeded})
		auditOld := f.run(runSpec{group: "audit", at: old, state: kind.RunSucceeded, log: "audit\n"})
		killedOld := f.run(runSpec{group: "app", at: old.Add(time.Hour), state: kind.RunKilled})
		recent := f.run(runSpec{group: "app", at: now.Add(-10 * day), state: kind.RunSucceeded, log: "recent\n"})
		// Still going now: a retry of an old failure and a child of an old success.
		retry := f.run(runSpec{group: "app", at: now.Add(-time.Minute), state: kind.RunScheduled, retryOf: retried})
		child := f.run(runSpec{group: "app", at: now.Add(-time.Minute), state: kind.RunRunning, key: store.ParentRunKey(parent)})

		clock := clockwork.NewFakeClockAt(now)
		w := newWorker(t, st, clock, "n1", retention.Config{Runs: retention.Age(30 * day), Logs: retention.Age(7 * day),
			Groups: map[string]retention.GroupConfig{"audit": {Runs: retention.Age(90 * day)}}}, false)

		// Only one replica purges at a time.
		other := newWorker(t, st, clock, "n2", retention.Config{}, false)
		res, err := w.Cycle(ctx)
		require.NoError(t, err)
		require.True(t, res.Held)
		res2, err := other.Cycle(ctx)
		require.NoError(t, err)
		require.False(t, res2.Held, "a second replica must not purge while the lease is held")

		require.Equal(t, int64(3), res.Runs, "oldDone, failedDone and killedOld go")
		for name, id := range map[string]int64{"oldDone": oldDone, "failedDone": failedDone, "killedOld": killedOld} {
			require.False(t, f.exists(id), "%s (%d) is past its retention and should be gone", name, id)
		}
		for name, id := range map[string]int64{"running": running, "scheduled": scheduled, "failedPending": failedPending,
			"retried": retried, "parent": parent, "auditOld": auditOld, "recent": recent, "retry": retry, "child": child} {
			require.True(t, f.exists(id), "%s (%d) is still needed or within its retention and must stay", name, id)
		}
		require.False(t, f.hasLog(oldDone), "a purged run's log goes with it")
		require.False(t, f.hasLog(recent), "retention.logs (7d) is shorter than the run's age (10d)")
		require.True(t, f.hasLog(running), "a running run keeps its log")
		require.False(t, f.hasLog(auditOld), "the audit group keeps runs 90d, logs only the global 7d")

		// Nothing else goes on a second pass.
		res, err = w.Cycle(ctx)
		require.NoError(t, err)
		require.Zero(t, res.Runs)

		// The child and the retry finish; their parents may go once the
		// walk comes round again (it restarts from the oldest run hourly).
		_, err = st.RunSetState(ctx, child, kind.RunRunning, kind.RunSucceeded, "", now.UnixMilli())
		require.NoError(t, err)
		_, err = st.RunSetState(ctx, retry, kind.RunScheduled, kind.RunSucceeded, "", now.UnixMilli())
		require.NoError(t, err)
		clock.Advance(2 * time.Hour)
		res, err = w.Cycle(ctx)
		require.NoError(t, err)
		require.False(t, f.exists(parent), "the parent goes once its child has finished")
		require.False(t, f.exists(retried), "the failure goes once its retry has finished")
		require.True(t, f.exists(child) && f.exists(retry), "the child and the retry are young")
		require.True(t, f.exists(running) && f.exists(failedPending) && f.exists(scheduled))
	})
}

// TestRetentionWaitsForTheReports: with reports on, a run the roll-up has
// not counted yet is kept, however old.
func TestRetentionWaitsForTheReports(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		f := newFixture(t, st, "app")
		now := t0.Add(40 * day)
		counted := f.run(runSpec{group: "app", at: t0, state: kind.RunSucceeded})
		pending := f.run(runSpec{group: "app", at: t0, state: kind.RunSucceeded})
		require.NoError(t, st.ReportApply(ctx, store.ReportApplyParams{To: store.ReportMark{RunID: pending, Seq: 1, AtMs: now.UnixMilli()}, AddPending: []int64{pending}}))
		uncounted := f.run(runSpec{group: "app", at: t0, state: kind.RunSucceeded})

		w := newWorker(t, st, clockwork.NewFakeClockAt(now), "n1", retention.Config{}, true)
		res, err := w.Cycle(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1), res.Runs)
		require.False(t, f.exists(counted))
		require.True(t, f.exists(pending), "a run in run_reports_pending is not counted yet")
		require.True(t, f.exists(uncounted), "a run past the roll-up's watermark is not counted yet")
	})
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  retention.Config
		want string
	}{
		{"logs longer than runs", retention.Config{Runs: retention.Age(7 * day), Logs: retention.Age(30 * day)}, "retention.logs"},
		{"tiny runs", retention.Config{Runs: retention.Age(time.Minute)}, "retention.runs"},
		{"group logs longer", retention.Config{Groups: map[string]retention.GroupConfig{"x": {Runs: retention.Age(day), Logs: retention.Age(2 * day)}}}, "retention.groups.x.logs"},
		{"batch", retention.Config{BatchSize: 1_000_000}, "retention.batch_size"},
		{"drop gap", retention.Config{DropGap: 2 * time.Hour}, "retention.drop_gap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.WithDefaults().Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
	require.NoError(t, retention.Config{}.WithDefaults().Validate())
	d, err := retention.ParseAge("30d")
	require.NoError(t, err)
	require.Equal(t, 30*day, d)
	_, err = retention.ParseAge("thirty days")
	require.Error(t, err)
}

// TestRetentionMatchesTheRules: a few hundred runs of every kind, ages and
// groups, purged in id ranges of 7: what is left is exactly what the rules
// keep (checked run by run against an oracle), however the kept runs fall
// across the ranges.
func TestRetentionMatchesTheRules(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		f := newFixture(t, st, "app", "keep", "brief")
		now := t0.Add(100 * day)
		retain := map[string]time.Duration{"app": 30 * day, "keep": 60 * day, "brief": 5 * day}
		logRetain := map[string]time.Duration{"app": 10 * day, "keep": 10 * day, "brief": 5 * day}
		rnd := rand.New(rand.NewPCG(18, 1))
		states := []kind.RunState{kind.RunSucceeded, kind.RunSucceeded, kind.RunSucceeded, kind.RunFailed, kind.RunKilled, kind.RunRunning, kind.RunScheduled}
		type want struct {
			id       int64
			run, log bool
			desc     string
		}
		var wants []want
		var finals []int64
		groups := []string{"app", "keep", "brief"}
		for i := 0; i < 150; i++ {
			g := groups[rnd.IntN(len(groups))]
			st := states[rnd.IntN(len(states))]
			// Ids grow with time: creation times grow with i.
			spec := runSpec{group: g, at: now.Add(-90 * day).Add(time.Duration(i) * (90 * day / 150)), state: st, log: "line\n"}
			age := now.Sub(spec.at)
			spec.followup = st == kind.RunFailed && rnd.IntN(3) > 0
			id := f.run(spec)
			final := st.Final()
			pending := st == kind.RunFailed && !spec.followup
			old := age > retain[g]+time.Second
			oldLog := age > logRetain[g]+time.Second
			w := want{id: id, desc: fmt.Sprintf("%s %s %.0fd followup-done=%v", g, st, age.Hours()/24, spec.followup)}
			w.run = !(final && !pending && old)
			w.log = !(final && !pending && (old || oldLog))
			wants = append(wants, w)
			if final && !pending {
				finals = append(finals, int64(len(wants)-1))
			}
		}
		// Some old finished runs are still referenced by a run in flight:
		// they stay, and so do their logs (the chain stays readable).
		for _, idx := range finals[:6] {
			w := &wants[idx]
			ref := f.run(runSpec{group: "app", at: now.Add(-time.Minute), state: kind.RunRunning, retryOf: w.id, log: "line\n"})
			w.run, w.log, w.desc = true, true, w.desc+" (retried by a running run)"
			wants = append(wants, want{id: ref, run: true, log: true, desc: "running retry"})
		}
		for _, idx := range finals[6:10] {
			w := &wants[idx]
			ref := f.run(runSpec{group: "app", at: now.Add(-time.Minute), state: kind.RunScheduled, key: store.ParentRunKey(w.id), log: "line\n"})
			w.run, w.log, w.desc = true, true, w.desc+" (parent of a scheduled child)"
			wants = append(wants, want{id: ref, run: true, log: true, desc: "scheduled child"})
		}

		cfg := retention.Config{Runs: retention.Age(30 * day), Logs: retention.Age(10 * day),
			Groups: map[string]retention.GroupConfig{"keep": {Runs: retention.Age(60 * day)}, "brief": {Runs: retention.Age(5 * day)}}}
		cfg.BatchSize = 7
		cfg.Pause = time.Millisecond
		w, err := retention.New(retention.Options{Config: cfg, Store: st, Node: "n1", Clock: clockwork.NewFakeClockAt(now)})
		require.NoError(t, err)
		res, err := w.Cycle(ctx)
		require.NoError(t, err)
		require.True(t, res.Held)
		gone := 0
		for _, w := range wants {
			require.Equal(t, w.run, f.exists(w.id), "run %d (%s): kept?", w.id, w.desc)
			if w.run {
				require.Equal(t, w.log, f.hasLog(w.id), "log of run %d (%s): kept?", w.id, w.desc)
			} else {
				gone++
				require.False(t, f.hasLog(w.id), "log of purged run %d (%s)", w.id, w.desc)
			}
		}
		require.Equal(t, int64(gone), res.Runs)
		require.Greater(t, gone, 50, "the mix purges a good part of the runs")
		res, err = w.Cycle(ctx)
		require.NoError(t, err)
		require.Zero(t, res.Runs+res.Logs, "a second cycle finds nothing more")
	})
}
