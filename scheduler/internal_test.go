package scheduler

import (
	"maps"
	"sort"
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
	c.groups[1] = cachedGroup{g: &store.Group{ID: 1, AppName: "pay", Members: []string{"local://short"},
		GroupExecutorSettings: store.GroupExecutorSettings{AcceptRegistrations: true}}, at: clock.Now().Add(-time.Hour)}
	c.execs["pay"] = cachedExecs{addrs: []string{"http://10.0.0.1:9999/", long}, at: clock.Now().Add(-time.Hour)}
	c.groups[2] = cachedGroup{g: &store.Group{ID: 2, AppName: "closed", Members: []string{"noop://bench"}}, at: clock.Now()}
	c.execs["closed"] = cachedExecs{addrs: []string{long}, at: clock.Now()}
	runs := []store.RunInsert{{GroupID: 1}, {GroupID: 2}, {GroupID: 3}, {GroupID: 1}}
	c.handoffRooms(runs)
	grow := len("dispatching") - len("scheduled") + handoffRoomOutcome
	require.Equal(t, len(long)+grow, runs[0].HandoffRoom)
	require.Equal(t, runs[0].HandoffRoom, runs[3].HandoffRoom)
	require.Equal(t, len("noop://bench")+grow, runs[1].HandoffRoom, "executors registered under a group that does not accept them are not its targets")
	require.Equal(t, len("http://10.0.12.34:9999/")+grow, runs[2].HandoffRoom, "not cached: an executor's address")
}

// preReadSim runs the pre-read's planning cycle by cycle over a set of jobs
// on a fake clock, the way the schedule loop does against the database:
// read the jobs due within readAhead (earliest first, up to the limit), plan
// them, record the runs, advance the jobs.
type preReadSim struct {
	t        *testing.T
	p        *preReader
	clock    *clockwork.FakeClock
	jobs     map[int64]*store.Job
	fires    map[[2]int64]int // job, fire time: runs recorded
	runs     map[int64]int    // job: runs recorded
	advances map[int64]int    // job: rows advanced
	inserts  []int            // per cycle: runs recorded of the jobs with ids up to frequent
	reads    []int            // per cycle: jobs read
	frequent int64
}

func newPreReadSim(t *testing.T, start time.Time) *preReadSim {
	cfg := Config{PreReadWindow: 5 * time.Second, LoopInterval: time.Second, MisfireThreshold: 5 * time.Second, PreReadLimit: 5000}
	return &preReadSim{t: t, clock: clockwork.NewFakeClockAt(start), jobs: map[int64]*store.Job{}, fires: map[[2]int64]int{}, runs: map[int64]int{}, advances: map[int64]int{},
		p: &preReader{cfg: cfg, cache: &scheduleCache{}, metrics: NewMetrics(prometheus.NewRegistry()), log: logrus.NewEntry(logrus.New())}}
}

func (s *preReadSim) add(id int64, conf string) {
	j := &store.Job{ID: id, ScheduleType: "cron", ScheduleConf: conf, TimeZone: "UTC", Enabled: true}
	s.setNext(j)
	s.jobs[id] = j
}

// setNext is what an edit or a start does: the next fire is the
// schedule's first after now.
func (s *preReadSim) setNext(j *store.Job) {
	sched, err := s.p.cache.get(j)
	require.NoError(s.t, err)
	next, ok := sched.Next(s.clock.Now())
	require.True(s.t, ok)
	j.NextFireMs = next.UnixMilli()
}

// cycle runs one pre-read at the clock's now and checks that no fire is
// planned beyond the window.
func (s *preReadSim) cycle() {
	now := s.clock.Now()
	var due []store.Job
	for _, j := range s.jobs {
		if j.Enabled && j.NextFireMs > 0 && j.NextFireMs <= now.UnixMilli()+s.p.cfg.readAhead().Milliseconds() {
			due = append(due, *j)
		}
	}
	sort.Slice(due, func(a, b int) bool { return due[a].NextFireMs < due[b].NextFireMs })
	due = due[:min(len(due), s.p.cfg.PreReadLimit)]
	pl := s.p.planWithin(due, now, nil, nil)
	n := 0
	for _, in := range pl.inserts {
		if in.JobID <= s.frequent {
			n++
		}
		require.LessOrEqual(s.t, in.ScheduledMs, now.Add(s.p.cfg.PreReadWindow).UnixMilli(), "job %d: a fire planned beyond the window", in.JobID)
		s.fires[[2]int64{in.JobID, in.ScheduledMs}]++
		s.runs[in.JobID]++
	}
	for _, a := range pl.advances {
		j := s.jobs[a.ID]
		j.NextFireMs, j.LastFireMs = a.NextFireMs, a.LastFireMs
		s.advances[a.ID]++
	}
	s.inserts = append(s.inserts, n)
	s.reads = append(s.reads, len(due))
}

// A job that fires every second is read and its row advanced once every
// k = 3 cycles (planned three seconds at a time), never further ahead than
// the 5 s window; the jobs are staggered by id, so every cycle reads a third
// of them and records one second of their fires: no cycle records three
// seconds of every job. Before, every such job was read and advanced every
// cycle.
func TestPreReadPlansFrequentJobsSeveralSecondsAtATime(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 6, 1, 12, 0, 0, 500_000_000, time.UTC) // cycles run half a second off the fires
	s := newPreReadSim(t, start)
	const everySecond, burst = 3000, 500
	s.frequent = everySecond
	for id := int64(1); id <= everySecond; id++ {
		s.add(id, "* * * * * ?")
	}
	for id := int64(everySecond + 1); id <= everySecond+burst; id++ {
		s.add(id, "*/10 * * * * ?") // all in the same second, every 10 s
	}
	s.add(9001, "0 * * * * ?") // once a minute
	s.add(9002, "*/2 * * * * ?")
	require.Equal(t, int64(3), s.p.cfg.planCycles())
	require.Equal(t, 3*time.Second, s.p.cfg.readAhead())

	const warm, cycles = 6, 120
	var adv0 map[int64]int
	for c := 0; c < cycles; c++ {
		if c == warm {
			adv0 = maps.Clone(s.advances)
		}
		s.cycle()
		s.clock.Advance(time.Second)
	}
	end := s.clock.Now()

	// Every fire recorded exactly once, with no gap, up to the last planned.
	for id, j := range s.jobs {
		sched, err := s.p.cache.get(j)
		require.NoError(t, err)
		n := 0
		for at, ok := sched.Next(start.Add(-time.Millisecond)); ok && at.UnixMilli() < j.NextFireMs; at, ok = sched.Next(at) {
			require.Equal(t, 1, s.fires[[2]int64{id, at.UnixMilli()}], "job %d fire %s", id, at.Format("15:04:05"))
			n++
		}
		require.Equal(t, n, s.runs[id], "job %d: no run outside its schedule", id)
		require.Greater(t, time.UnixMilli(j.NextFireMs), end.Add(s.p.cfg.readAhead()-time.Second), "job %d planned up to the read-ahead", id)
	}

	// Each every-second job advanced once every 3 cycles after the first.
	steady := cycles - warm
	for id := int64(1); id <= everySecond; id++ {
		n := s.advances[id] - adv0[id]
		require.InDelta(t, steady/3, n, 1, "job %d advanced %d times in %d cycles", id, n, steady)
	}
	require.Equal(t, cycles/60, s.advances[9001], "a once-a-minute job is advanced once a fire")

	// Even load: each steady cycle records one second of the every-second
	// jobs' fires and reads a third of them (the burst adds its 500 every
	// tenth cycle, as before).
	for c := warm; c < cycles; c++ {
		require.InDelta(t, everySecond, s.inserts[c], everySecond/20, "cycle %d recorded %d runs (all: %v)", c, s.inserts[c], s.inserts[warm:])
		require.Less(t, s.reads[c], everySecond/3+burst+20, "cycle %d read %d jobs", c, s.reads[c])
	}
}
