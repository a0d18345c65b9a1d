package scheduler

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/store"
)

func TestSlowJobRule(t *testing.T) {
	t.Parallel()
	clk := clockwork.NewFakeClockAt(time.Date(2026, 6, 1, 12, 0, 10, 0, time.UTC))
	s := &slowTracker{clock: clk, threshold: 500 * time.Millisecond, count: 10}
	for i := 0; i < 10; i++ {
		s.note(7, 600*time.Millisecond)
	}
	s.note(7, 100*time.Millisecond) // fast dispatches do not count
	require.False(t, s.isSlow(7), "10 slow dispatches is not more than 10")
	s.note(7, 501*time.Millisecond)
	require.True(t, s.isSlow(7), "the 11th slow dispatch in a minute moves the job to the slow pool")
	require.False(t, s.isSlow(8), "other jobs are unaffected")
	clk.Advance(50 * time.Second) // the wall-clock minute changes
	require.False(t, s.isSlow(7), "counters reset when the minute changes")
}

func TestPartitionPlanSpreadsReplicas(t *testing.T) {
	t.Parallel()
	p := &peerView{}
	p.set("b", []string{"c", "a", "b"})
	pref, max := p.partitionPlan(4)
	require.Equal(t, 2, max)
	require.Equal(t, []int{2, 3, 0, 1}, pref, "the second of three replicas starts at its own share")
	p.set("a", []string{"a"})
	pref, max = p.partitionPlan(4)
	require.Equal(t, 4, max)
	require.Equal(t, []int{0, 1, 2, 3}, pref)
	p.set("z", nil) // no view yet: behave as the only replica
	_, max = p.partitionPlan(3)
	require.Equal(t, 3, max)
}

func TestRingTakesEverySlotUpToNow(t *testing.T) {
	t.Parallel()
	r := newRing(clockwork.NewFakeClock(), nil)
	r.push(fire{runID: 1, scheduledMs: 10_000}, fire{runID: 2, scheduledMs: 11_500}, fire{runID: 3, scheduledMs: 12_000}, fire{runID: 4, scheduledMs: 9_000})
	require.Equal(t, 4, r.Len())
	got := r.takeDue(11)
	require.Len(t, got, 2, "slots 9 and 10; 11.5 s rounds up to slot 12 so it never fires early")
	require.Equal(t, int64(4), got[0].runID, "oldest first")
	require.Len(t, r.takeDue(12), 2)
	require.Zero(t, r.Len())
}

// A pre-read whose window holds more fires than one transaction records
// shrinks the window in proportion, so the jobs get ahead of the clock
// again. With a fixed one-second fallback, 10,000 every-second jobs one
// second ahead stayed one second ahead for ever, and the cycles re-read and
// re-wrote thousands of jobs that had no fire in that second.
func TestPreReadWindowShrinksInProportionAndCatchesUp(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 6, 1, 12, 0, 0, 500_000_000, time.UTC)
	p := &preReader{cfg: Config{PreReadWindow: 5 * time.Second, MisfireThreshold: 5 * time.Second},
		cache: &scheduleCache{}, metrics: NewMetrics(prometheus.NewRegistry()), log: logrus.NewEntry(logrus.New())}
	jobs := make([]store.Job, 5000)
	for i := range jobs {
		jobs[i] = store.Job{ID: int64(i + 1), ScheduleType: "cron", ScheduleConf: "* * * * * ?", TimeZone: "UTC",
			NextFireMs: now.Add(500 * time.Millisecond).UnixMilli(), LastFireMs: now.Add(-500 * time.Millisecond).UnixMilli()}
	}
	// Each job has 5 fires in the 5 s window: 25,000 > maxFiresPerCycle.
	pl := p.planWithin(jobs, now, nil, nil)
	require.Equal(t, len(jobs), pl.jobs, "every job read is planned")
	require.LessOrEqual(t, len(pl.inserts), maxFiresPerCycle)
	require.Len(t, pl.advances, len(jobs))
	ahead := time.UnixMilli(pl.advances[0].NextFireMs).Sub(now)
	require.Greater(t, ahead, 2*time.Second, "the jobs get more than a one-second fallback ahead")
	require.GreaterOrEqual(t, len(pl.inserts), 2*len(jobs))

	// A few cycles later they are a whole window ahead: the next cycle
	// plans one fire each, and a job with no fire in the window is not
	// written at all.
	for i := 0; i < 10; i++ {
		for j := range jobs {
			jobs[j].NextFireMs, jobs[j].LastFireMs = pl.advances[0].NextFireMs, pl.advances[0].LastFireMs
		}
		now = now.Add(time.Second)
		pl = p.planWithin(jobs, now, nil, nil)
		require.Equal(t, len(jobs), pl.jobs)
	}
	require.Len(t, pl.inserts, len(jobs), "steady state: one fire per job per cycle")
	late := append([]store.Job(nil), jobs[:1]...)
	late[0].NextFireMs = now.Add(time.Hour).UnixMilli()
	require.Empty(t, p.planWithin(late, now, nil, nil).advances, "no fire in the window: nothing to write")
}

// The room a pre-read run reserves for its hand-off covers the longest
// target its group's cache knows (registered executors and static members),
// the state's growth and a short outcome message; a group not cached yet
// gets an executor address's length. The cache is only read: an expired
// entry still sizes the room.
func TestHandoffRoomFitsTheGroupsLongestTarget(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	c := newCandidates(nil, clock, nil, time.Minute)
	long := "http://executor-7.payments.internal:9999/"
	c.groups[1] = cachedGroup{g: store.Group{ID: 1, AppName: "pay", Members: []string{"local://short"},
		GroupExecutorSettings: store.GroupExecutorSettings{AcceptRegistrations: true}}, at: clock.Now().Add(-time.Hour)}
	c.execs["pay"] = cachedExecs{addrs: []string{"http://10.0.0.1:9999/", long}, at: clock.Now().Add(-time.Hour)}
	c.groups[2] = cachedGroup{g: store.Group{ID: 2, AppName: "closed", Members: []string{"noop://bench"}}, at: clock.Now()}
	c.execs["closed"] = cachedExecs{addrs: []string{long}, at: clock.Now()}
	runs := []store.RunInsert{{GroupID: 1}, {GroupID: 2}, {GroupID: 3}, {GroupID: 1}}
	c.handoffRooms(runs)
	grow := len("dispatching") - len("scheduled") + handoffRoomOutcome
	require.Equal(t, len(long)+grow, runs[0].HandoffRoom)
	require.Equal(t, runs[0].HandoffRoom, runs[3].HandoffRoom)
	require.Equal(t, len("noop://bench")+grow, runs[1].HandoffRoom, "executors registered under a group that does not accept them are not its targets")
	require.Equal(t, len("http://10.0.12.34:9999/")+grow, runs[2].HandoffRoom, "not cached: an executor's address")
}
