package scheduler_test

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/store"
)

func TestMain(m *testing.M) {
	if runChildIfAsked() {
		return
	}
	dbtest.Main(m)
}

var noon = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func at(h, m, s int) int64 {
	return time.Date(2026, 6, 1, h, m, s, 0, time.UTC).UnixMilli()
}

func eachDialect(t *testing.T, fn func(t *testing.T, dialect string)) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			fn(t, dialect)
		})
	}
}

// eachServer is eachDialect over the database servers only (MySQL/MariaDB
// and PostgreSQL): several replicas at once, named locks, ended sessions.
func eachServer(t *testing.T, fn func(t *testing.T, dialect string)) {
	for _, dialect := range storetest.Servers {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			fn(t, dialect)
		})
	}
}

func scheduledTimes(ds []dispatchSeen, jobID int64) []int64 {
	var out []int64
	for _, d := range ds {
		if d.JobID == jobID {
			out = append(out, d.ScheduledMs)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// requireOnTime checks each dispatched run was claimed (fired) in the second
// it was due. The claim time is the scheduler's clock at fire time; the
// driver itself runs on a pool worker a moment later.
func requireOnTime(t *testing.T, b *bundle, ds []dispatchSeen) {
	t.Helper()
	for _, d := range ds {
		r, err := b.st.RunGet(context.Background(), d.RunID)
		require.NoError(t, err)
		require.Equal(t, (d.ScheduledMs+999)/1000, r.DispatchedMs/1000, "fired in the wrong second: %s (claimed %s)", fmtSeen([]dispatchSeen{d}), secs(r.DispatchedMs))
	}
}

func TestRingFiresInTheRightSecond(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, dialect string) {
		b := setup(t, dialect, noon)
		j := b.job("every-5s", "cron", "*/5 * * * * ?", "UTC", "", 0)
		n := b.startNode("a", nil)
		b.step(1, 21*time.Second)
		ds := b.waitDispatched(4)
		require.Equal(t, []int64{at(12, 0, 5), at(12, 0, 10), at(12, 0, 15), at(12, 0, 20)}, scheduledTimes(ds, j.ID), fmtSeen(ds))
		requireOnTime(t, b, ds)
		rs := b.waitSettledRuns(j.ID)
		var ok int
		for _, r := range rs {
			if r.State == kind.RunSucceeded {
				ok++
				require.Equal(t, "rec://target", r.Target)
				require.False(t, r.Late)
				require.Equal(t, kind.TriggerSchedule, r.TriggerType)
			}
		}
		require.Equal(t, 4, ok)
		require.Equal(t, 4, n.rec.count())
	})
}

func TestScheduleKinds(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, dialect string) {
		b := setup(t, dialect, noon)
		fixed := b.job("fixed", "fixed_rate", "3", "UTC", "", 0)
		once := b.job("once", "at", "2026-06-01T12:00:04Z", "UTC", "", 0)
		secs := b.job("secs", "cron", "3,7 * * * * ?", "UTC", "", 0)
		b.startNode("a", nil)
		b.step(1, 10*time.Second)
		ds := b.waitDispatched(3 + 1 + 2)
		require.Equal(t, []int64{at(12, 0, 3), at(12, 0, 6), at(12, 0, 9)}, scheduledTimes(ds, fixed.ID), fmtSeen(ds))
		require.Equal(t, []int64{at(12, 0, 4)}, scheduledTimes(ds, once.ID))
		require.Equal(t, []int64{at(12, 0, 3), at(12, 0, 7)}, scheduledTimes(ds, secs.ID))
		requireOnTime(t, b, ds)
		got, err := b.st.JobGet(context.Background(), once.ID)
		require.NoError(t, err)
		require.False(t, got.Enabled, "a one-time job stops after its fire")
		require.Zero(t, got.NextFireMs)
	})
}

func TestPreReadCases(t *testing.T) {
	t.Parallel()
	eachServer(t, testPreReadCases)
}

func testPreReadCases(t *testing.T, dialect string) {
	t.Run("more than 5s late, do_nothing: recorded as misfired, not fired", func(t *testing.T) {
		t.Parallel()
		b := setup(t, dialect, noon)
		j := b.job("late", "cron", "*/10 * * * * ?", "UTC", kind.MisfireDoNothing, at(11, 59, 50))
		b.startNode("a", nil)
		b.step(1, 3*time.Second)
		ds := b.waitDispatched(1)
		require.Equal(t, []int64{at(12, 0, 0)}, scheduledTimes(ds, j.ID), "the fire due now still fires; the missed one does not")
		rs := b.waitSettledRuns(j.ID)
		var misfired []store.Run
		for _, r := range rs {
			if r.State == kind.RunMisfired {
				misfired = append(misfired, r)
			}
		}
		require.Len(t, misfired, 1)
		require.Equal(t, at(11, 59, 50), misfired[0].ScheduledMs)
		require.Contains(t, misfired[0].Message, "do_nothing")
	})
	t.Run("more than 5s late, fire_once_now: fired once now", func(t *testing.T) {
		t.Parallel()
		b := setup(t, dialect, noon)
		j := b.job("late", "cron", "*/10 * * * * ?", "UTC", kind.MisfireFireOnceNow, at(11, 59, 30))
		b.startNode("a", nil)
		b.step(1, 3*time.Second)
		ds := b.waitDispatched(2)
		require.Equal(t, []int64{at(11, 59, 30), at(12, 0, 0)}, scheduledTimes(ds, j.ID), fmtSeen(ds))
		rs := b.waitSettledRuns(j.ID)
		require.Len(t, rs, 4, "one compensation fire, the fire due now, and the missed times in between recorded")
		var skipped []int64
		for _, r := range rs {
			if r.State == kind.RunMisfired {
				skipped = append(skipped, r.ScheduledMs)
				require.Contains(t, r.Message, "skipped")
				continue
			}
			require.Equal(t, kind.RunSucceeded, r.State)
			if r.ScheduledMs == at(11, 59, 30) {
				require.Equal(t, kind.TriggerMisfire, r.TriggerType)
				require.True(t, r.Late)
			}
		}
		require.ElementsMatch(t, []int64{at(11, 59, 40), at(11, 59, 50)}, skipped, "one compensation fire, not one per missed time")
	})
	t.Run("late by less than 5s: every missed fire fires now", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "sqlite", noon)
		j := b.job("late", "cron", "* * * * * ?", "UTC", kind.MisfireDoNothing, at(11, 59, 57))
		b.startNode("a", nil)
		b.step(1, 1*time.Second)
		ds := b.waitDispatched(5)
		require.Equal(t, []int64{at(11, 59, 57), at(11, 59, 58), at(11, 59, 59), at(12, 0, 0), at(12, 0, 1)}, scheduledTimes(ds, j.ID)[:5], fmtSeen(ds))
		for _, d := range ds {
			// The pre-read that finds them late may hand them over before or
			// at the first tick of the fake clock; never later.
			require.False(t, d.At.After(noon.Add(time.Second)), "all fire at once, by the first tick: %s", fmtSeen(ds))
		}
		rs := b.waitSettledRuns(j.ID)
		late := map[int64]bool{}
		for _, r := range rs {
			// Late means claimed more than 1 s after its time; the claim is
			// at the start or at the first tick (see above).
			require.Equal(t, r.DispatchedMs-r.ScheduledMs > 1000, r.Late, "run scheduled %d, claimed %d", r.ScheduledMs, r.DispatchedMs)
			late[r.ScheduledMs] = r.Late
		}
		require.True(t, late[at(11, 59, 57)] && late[at(11, 59, 58)], "fires 2 s or more behind are recorded late")
		require.False(t, late[at(12, 0, 1)], "the fire due at the first tick is not late")
	})
}

func TestDST(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		tz, cron  string
		start     time.Time
		want      time.Time // the single fire
		repeatAt  time.Time // zero, or the instant the wall time repeats (must not fire)
		nextAfter time.Time // the job's next fire afterwards
	}{
		{"Berlin spring forward: 02:30 does not exist, fires once at 03:00 CEST", "Europe/Berlin", "0 30 2 * * ?",
			time.Date(2026, 3, 29, 0, 59, 57, 0, time.UTC), time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC), time.Time{},
			time.Date(2026, 3, 30, 0, 30, 0, 0, time.UTC)},
		{"Berlin fall back: 02:30 happens twice, fires once", "Europe/Berlin", "0 30 2 * * ?",
			time.Date(2026, 10, 25, 0, 29, 57, 0, time.UTC), time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC), time.Date(2026, 10, 25, 1, 30, 0, 0, time.UTC),
			time.Date(2026, 10, 26, 1, 30, 0, 0, time.UTC)},
		{"New York spring forward: 02:30 does not exist, fires once at 03:00 EDT", "America/New_York", "0 30 2 * * ?",
			time.Date(2026, 3, 8, 6, 59, 57, 0, time.UTC), time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC), time.Time{},
			time.Date(2026, 3, 9, 6, 30, 0, 0, time.UTC)},
		{"New York fall back: 01:30 happens twice, fires once", "America/New_York", "0 30 1 * * ?",
			time.Date(2026, 11, 1, 5, 29, 57, 0, time.UTC), time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC),
			time.Date(2026, 11, 2, 6, 30, 0, 0, time.UTC)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, "sqlite", tc.start)
			j := b.job("dst", "cron", tc.cron, tc.tz, "", 0)
			b.startNode("a", nil)
			b.step(1, 5*time.Second)
			if !tc.repeatAt.IsZero() {
				// Jump to just before the repeated wall time and watch it pass.
				b.clock.Advance(tc.repeatAt.Add(-3 * time.Second).Sub(b.clock.Now()))
				b.step(1, 6*time.Second)
			}
			ds := b.waitDispatched(1)
			require.Equal(t, []int64{tc.want.UnixMilli()}, scheduledTimes(ds, j.ID), fmtSeen(ds))
			requireOnTime(t, b, ds)
			got, err := b.st.JobGet(context.Background(), j.ID)
			require.NoError(t, err)
			require.Equal(t, tc.nextAfter.UnixMilli(), got.NextFireMs, "next fire %s", time.UnixMilli(got.NextFireMs).UTC())
		})
	}
}

// exactlyOnce checks that every expected fire was dispatched once and none twice.
func exactlyOnce(t *testing.T, ds []dispatchSeen, jobs []store.Job, fromMs, toMs int64) {
	t.Helper()
	seen := map[[2]int64]int{}
	for _, d := range ds {
		seen[[2]int64{d.JobID, d.ScheduledMs}]++
	}
	for k, n := range seen {
		require.Equal(t, 1, n, "job %d fire %s dispatched %d times", k[0], secs(k[1]), n)
	}
	for _, j := range jobs {
		for ms := fromMs; ms <= toMs; ms += 1000 {
			require.Equal(t, 1, seen[[2]int64{j.ID, ms}], "job %d fire %s not dispatched", j.ID, secs(ms))
		}
	}
}

func TestTwoInstancesDispatchEveryFireOnce(t *testing.T) {
	t.Parallel()
	eachServer(t, testTwoInstancesDispatchEveryFireOnce)
}

func testTwoInstancesDispatchEveryFireOnce(t *testing.T, dialect string) {
	b := setup(t, dialect, noon)
	var jobs []store.Job
	for i := 0; i < 50; i++ {
		jobs = append(jobs, b.job("every-second", "cron", "* * * * * ?", "UTC", "", 0))
	}
	b.startNode("a", nil)
	b.startNode("b", nil)
	b.step(2, 20*time.Second)
	b.waitDispatched(50 * 20)
	time.Sleep(50 * time.Millisecond) // give a stray double dispatch the chance to show
	ds := b.waitDispatched(50 * 20)
	require.Len(t, ds, 1000)
	exactlyOnce(t, ds, jobs, at(12, 0, 1), at(12, 0, 20))
	requireOnTime(t, b, ds)
	counts, err := b.st.RunCountByState(context.Background(), 0)
	require.NoError(t, err)
	t.Logf("runs by state: %v", counts)
}

func TestPartitionsSpreadOverInstances(t *testing.T) {
	t.Parallel()
	eachServer(t, testPartitionsSpreadOverInstances)
}

func testPartitionsSpreadOverInstances(t *testing.T, dialect string) {
	b := setup(t, dialect, noon)
	var jobs []store.Job
	for i := 0; i < 40; i++ {
		jobs = append(jobs, b.job("every-second", "cron", "* * * * * ?", "UTC", "", 0))
	}
	p4 := func(c *scheduler.Config) { c.LockPartitions = 4 }
	b.startNode("a", p4)
	b.startNode("b", p4)
	b.step(2, 10*time.Second)
	ds := b.waitDispatched(40 * 10)
	exactlyOnce(t, ds, jobs, at(12, 0, 1), at(12, 0, 10))
	byNode := map[string]int{}
	for _, d := range ds {
		byNode[d.Node]++
	}
	require.Greater(t, byNode["a"], 0, "node a schedules: %v", byNode)
	require.Greater(t, byNode["b"], 0, "node b schedules: %v", byNode)
	t.Logf("dispatches by node with 4 partitions: %v", byNode)
}

func TestGracefulStopHandsBackTheRing(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, dialect string) {
		b := setup(t, dialect, noon)
		var jobs []store.Job
		for i := 0; i < 5; i++ {
			jobs = append(jobs, b.job("every-second", "cron", "* * * * * ?", "UTC", "", 0))
		}
		a := b.startNode("a", nil)
		b.step(1, 2*time.Second)
		b.waitDispatched(10)
		a.s.Stop(context.Background())
		handed, err := b.st.RunList(context.Background(), store.RunListParams{States: []kind.RunState{kind.RunScheduled}, Limit: 1000})
		require.NoError(t, err)
		require.NotEmpty(t, handed, "the stopped node leaves its ring's runs scheduled")
		for _, r := range handed {
			require.Equal(t, "a", r.Owner)
		}
		b.startNode("b", nil)
		b.step(1, 6*time.Second)
		ds := b.waitDispatched(5 * 8)
		exactlyOnce(t, ds, jobs, at(12, 0, 1), at(12, 0, 8))
		for _, r := range handed {
			got, err := b.st.RunGet(context.Background(), r.ID)
			require.NoError(t, err)
			require.Equal(t, "b", got.Owner, "taken over by b")
		}
	})
}

func TestTakeOverAppliesMisfirePolicy(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, dialect string) {
		b := setup(t, dialect, noon)
		ctx := context.Background()
		skip := b.job("skip", "none", "", "UTC", kind.MisfireDoNothing, 0)
		once := b.job("once", "none", "", "UTC", kind.MisfireFireOnceNow, 0)
		// A ghost node that died 30 s ago left runs scheduled: three long
		// missed per job, and one due in 12 s. A node that just started has
		// no evidence of the ghost's death but its silence: it declares it
		// dead after node_dead_after (10 s) of watching.
		require.NoError(t, b.st.NodeHeartbeat(ctx, store.NodeHeartbeatParams{ID: "ghost", NowMs: noon.Add(-30 * time.Second).UnixMilli()}))
		mk := func(j store.Job, ms int64) int64 {
			r, _, err := b.st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: ms, SchedFire: true,
				TriggerType: kind.TriggerSchedule, Owner: "ghost", CreatedMs: ms})
			require.NoError(t, err)
			return r.ID
		}
		for _, j := range []store.Job{skip, once} {
			for _, s := range []int{-20, -15, -10} {
				mk(j, noon.Add(time.Duration(s)*time.Second).UnixMilli())
			}
			mk(j, noon.Add(12*time.Second).UnixMilli())
		}
		b.startNode("a", nil)
		b.step(1, 13*time.Second)
		ds := b.waitDispatched(3)
		require.Equal(t, []int64{noon.Add(12 * time.Second).UnixMilli()}, scheduledTimes(ds, skip.ID), fmtSeen(ds))
		require.Equal(t, []int64{noon.Add(-10 * time.Second).UnixMilli(), noon.Add(12 * time.Second).UnixMilli()}, scheduledTimes(ds, once.ID),
			"fire_once_now fires only the latest missed run")
		for _, j := range []store.Job{skip, once} {
			states := map[kind.RunState]int{}
			for _, r := range b.waitSettledRuns(j.ID) {
				states[r.State]++
			}
			if j.ID == skip.ID {
				require.Equal(t, map[kind.RunState]int{kind.RunMisfired: 3, kind.RunSucceeded: 1}, states)
			} else {
				require.Equal(t, map[kind.RunState]int{kind.RunMisfired: 2, kind.RunSucceeded: 2}, states)
			}
		}
	})
}

func TestFullPoolIsBackPressureNotDrop(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", noon)
	// One send slot and one queue place: the pool holds 6 runs (its 5
	// goroutines, one per send slot and four handing off ahead, and the
	// queued one); the other 6 wait in the backlog for the next tick.
	var jobs []store.Job
	for i := 0; i < 12; i++ {
		jobs = append(jobs, b.job("j", "at", "2026-06-01T12:00:02Z", "UTC", "", 0))
	}
	tiny := func(c *scheduler.Config) {
		c.FastPool = scheduler.PoolConfig{Workers: 1, Queue: 1}
	}
	n := b.startNode("a", tiny)
	release := make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock) // registered after the node's Stop, so it runs first
	n.rec.mu.Lock()
	n.rec.block = release
	n.rec.mu.Unlock()
	b.step(1, 2*time.Second)
	b.waitDispatched(1)
	// A tick later one run is with the blocked send (claimed and handed
	// off); the others wait in the pool for its one send slot (no hand-off
	// while the slot is taken) or in the backlog, all still scheduled: a
	// run is claimed by its hand-off.
	b.step(1, time.Second)
	counts, err := b.st.RunCountByState(context.Background(), 0)
	require.NoError(t, err)
	require.Equal(t, map[kind.RunState]int{kind.RunDispatching: 1, kind.RunScheduled: 11}, counts)
	unblock()
	// The pool's runs go; the backlog's at the next ticks, late. The
	// goroutines run on real time, the ticks on the fake clock: each tick
	// waits until what was handed is sent, so a tick never finds the pool
	// still full only because the test outran it.
	for i := 0; i < 4; i++ {
		b.step(1, time.Second)
		require.Eventually(t, func() bool {
			counts, err := b.st.RunCountByState(context.Background(), 0)
			return err == nil && counts[kind.RunDispatching] == 0
		}, 10*time.Second, 2*time.Millisecond)
	}
	b.step(1, time.Second)
	ds := b.waitDispatched(12)
	require.Len(t, ds, 12)
	for _, j := range jobs {
		require.Len(t, b.waitSettledRuns(j.ID), 1)
	}
	var late int
	for _, j := range jobs {
		for _, r := range b.runs(j.ID) {
			require.Equal(t, kind.RunSucceeded, r.State)
			if r.Late {
				late++
			}
		}
	}
	require.GreaterOrEqual(t, late, 3, "runs held back by a full pool are recorded late")
}

func TestManualTriggerWithIdempotencyKey(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", noon)
	j := b.job("manual", "none", "", "UTC", "", 0)
	n := b.startNode("a", nil)
	b.settle(1)
	p := "override"
	r1, created, err := n.s.Trigger(context.Background(), scheduler.TriggerParams{JobID: j.ID, Params: &p, IdempotencyKey: "k"})
	require.NoError(t, err)
	require.True(t, created)
	r2, created, err := n.s.Trigger(context.Background(), scheduler.TriggerParams{JobID: j.ID, Params: &p, IdempotencyKey: "k"})
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, r1.ID, r2.ID)
	ds := b.waitDispatched(1)
	require.Len(t, ds, 1)
	rs := b.waitSettledRuns(j.ID)
	require.Len(t, rs, 1)
	require.Equal(t, kind.RunSucceeded, rs[0].State)
	require.Equal(t, "override", rs[0].Params)
	require.Equal(t, kind.TriggerManual, rs[0].TriggerType)
}
