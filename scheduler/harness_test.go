package scheduler_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/schedule"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
)

// recordingDriver is the test target: it records every dispatch it sees.
type recordingDriver struct {
	clock clockwork.Clock
	node  string

	mu    sync.Mutex
	seen  []dispatchSeen
	block chan struct{} // when set, Run waits on it (a slow target)
	// failFirst fails the first N dispatches of a job.
	failFirst map[int64]int
	// hold leaves runs of these jobs running (the target never reports).
	hold map[int64]bool
	// kills counts Kill calls.
	kills int
}

type dispatchSeen struct {
	Node        string
	RunID       int64
	JobID       int64
	ScheduledMs int64
	At          time.Time // the scheduler's clock when the driver was called
}

var _ targets.Driver = (*recordingDriver)(nil)

func (d *recordingDriver) Run(ctx context.Context, req targets.Request) (targets.Dispatch, error) {
	d.mu.Lock()
	block := d.block
	d.seen = append(d.seen, dispatchSeen{Node: d.node, RunID: req.RunID, JobID: req.JobID, ScheduledMs: req.ScheduledAt.UnixMilli(), At: d.clock.Now()})
	d.mu.Unlock()
	if block != nil {
		<-block
	}
	d.mu.Lock()
	fail := d.failFirst[req.JobID] > 0
	if fail {
		d.failFirst[req.JobID]--
	}
	hold := d.hold[req.JobID]
	d.mu.Unlock()
	if hold {
		return targets.Dispatch{Message: "accepted, never reports"}, nil
	}
	if fail {
		return targets.Dispatch{Done: &targets.Outcome{State: kind.RunFailed, Code: 500, Message: "boom"}}, nil
	}
	return targets.Dispatch{Done: &targets.Outcome{State: kind.RunSucceeded, Code: 200, Message: "recorded"}}, nil
}
func (d *recordingDriver) Beat(context.Context, string) error            { return nil }
func (d *recordingDriver) IdleBeat(context.Context, string, int64) error { return nil }
func (d *recordingDriver) Kill(context.Context, string, int64, int64) error {
	d.mu.Lock()
	d.kills++
	d.mu.Unlock()
	return nil
}
func (d *recordingDriver) Log(context.Context, string, int64, int) (targets.LogChunk, error) {
	return targets.LogChunk{}, nil
}

func (d *recordingDriver) all() []dispatchSeen {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]dispatchSeen(nil), d.seen...)
}

func (d *recordingDriver) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.seen)
}

// bundle is what a scheduler test needs.
type bundle struct {
	t      *testing.T
	st     *store.Store
	clock  *clockwork.FakeClock
	group  store.Group
	nodes  []*node
	jobSeq int // numbers job names (unique within the group)
	// alarmer is given to the nodes started from now on.
	alarmer scheduler.Alarmer
	// deliverer is given to the nodes started from now on.
	deliverer scheduler.Deliverer
	// logHook, when set, sees the log lines of the nodes started from now on.
	logHook logrus.Hook
	// drivers, by scheme, are registered on the nodes started from now on
	// besides their recording driver ("rec").
	drivers map[string]targets.Driver
}

type node struct {
	s   *scheduler.Scheduler
	rec *recordingDriver
}

func openStore(t *testing.T, dialect string) *store.Store {
	t.Helper()
	return storetest.Open(t, dialect)
}

func setup(t *testing.T, dialect string, start time.Time) *bundle {
	t.Helper()
	st := openStore(t, dialect)
	g, err := st.GroupCreate(context.Background(), store.GroupCreateParams{AppName: "test", Members: []string{"rec://target"}, NowMs: start.UnixMilli()})
	require.NoError(t, err)
	return &bundle{t: t, st: st, clock: clockwork.NewFakeClockAt(start), group: g}
}

// startNode starts a scheduler replica on the bundle's store and clock.
func (b *bundle) startNode(id string, mutate func(*scheduler.Config)) *node {
	b.t.Helper()
	return b.startNodeOn(id, b.clock, mutate)
}

// startNodeOn starts a replica on its own clock: a node whose clock does not
// advance is frozen (a paused process) while its database session lives.
func (b *bundle) startNodeOn(id string, clock *clockwork.FakeClock, mutate func(*scheduler.Config)) *node {
	b.t.Helper()
	rec := &recordingDriver{clock: clock, node: id}
	reg := targets.NewRegistry()
	reg.Register("rec", rec)
	for scheme, d := range b.drivers {
		reg.Register(scheme, d)
	}
	cfg := scheduler.Config{NodeID: id, StopGrace: 2 * time.Second}
	if mutate != nil {
		mutate(&cfg)
	}
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	if b.logHook != nil {
		log.AddHook(b.logHook)
	}
	s, err := scheduler.New(scheduler.Options{Config: cfg, Store: b.st, Drivers: reg, Clock: clock, Log: logrus.NewEntry(log), Alarmer: b.alarmer, Deliverer: b.deliverer})
	require.NoError(b.t, err)
	require.NoError(b.t, s.Start(context.Background()))
	n := &node{s: s, rec: rec}
	b.nodes = append(b.nodes, n)
	b.t.Cleanup(func() { s.Stop(context.Background()) })
	return n
}

// settle waits until every running node sleeps on the clock again, i.e. has
// finished the work of the current instant.
func (b *bundle) settle(running int) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	waiters := 0
	if running > 0 {
		waiters = running * b.nodes[0].s.ClockWaiters() // the nodes differ in config, not in services
	}
	require.NoError(b.t, b.clock.BlockUntilContext(ctx, waiters), "scheduler goroutines did not settle")
	// The trigger pool workers run on real time: the runs they were given
	// reach their hand-off (which reads the clock) before it moves on.
	for _, n := range b.nodes {
		for !n.s.DispatchSettled() {
			require.NoError(b.t, ctx.Err(), "trigger pool workers did not settle")
			time.Sleep(time.Millisecond)
		}
	}
}

// step advances the clock by d, one second at a time, letting the nodes work.
func (b *bundle) step(running int, d time.Duration) {
	b.t.Helper()
	for d > 0 {
		inc := min(d, time.Second)
		b.settle(running)
		b.clock.Advance(inc)
		d -= inc
	}
	b.settle(running)
}

// job creates an enabled job with the given schedule, its next fire computed
// from the clock (or taken from nextMs when non-zero).
func (b *bundle) job(name, schedType, conf, tz string, misfire kind.Misfire, nextMs int64) store.Job {
	b.t.Helper()
	if nextMs == 0 && schedType != "none" {
		s, err := schedule.Parse(schedule.Kind(schedType), conf, tz)
		require.NoError(b.t, err)
		n, ok := s.Next(b.clock.Now())
		require.True(b.t, ok)
		nextMs = n.UnixMilli()
	}
	if misfire == "" {
		misfire = kind.MisfireDoNothing
	}
	// Tests make many jobs from one name; job names are unique in a group.
	b.jobSeq++
	j, err := b.st.JobCreate(context.Background(), store.JobCreateParams{JobFields: store.JobFields{
		GroupID: b.group.ID, Name: fmt.Sprintf("%s-%d", name, b.jobSeq), ScheduleType: schedType, ScheduleConf: conf, TimeZone: tz, MisfirePolicy: misfire,
		Params: "p", RouteStrategy: "first", BlockStrategy: "SERIAL_EXECUTION", ShardCount: 1,
	}, Enabled: true, NextFireMs: nextMs, NowMs: b.clock.Now().UnixMilli()})
	require.NoError(b.t, err)
	return j
}

// waitDispatched waits (real time, with a deadline) until the nodes' drivers
// have seen n dispatches in total.
func (b *bundle) waitDispatched(n int) []dispatchSeen {
	b.t.Helper()
	var all []dispatchSeen
	require.Eventually(b.t, func() bool {
		all = nil
		for _, nd := range b.nodes {
			all = append(all, nd.rec.all()...)
		}
		return len(all) >= n
	}, 20*time.Second, 2*time.Millisecond, "want %d dispatches", n)
	return all
}

func (b *bundle) runs(jobID int64) []store.Run {
	b.t.Helper()
	rs, err := b.st.RunList(context.Background(), store.RunListParams{JobID: jobID, Limit: 1000})
	require.NoError(b.t, err)
	return rs
}

// waitRunStates waits until no run of the job is still dispatching (the
// ledger writer is asynchronous).
func (b *bundle) waitSettledRuns(jobID int64) []store.Run {
	b.t.Helper()
	var rs []store.Run
	require.Eventually(b.t, func() bool {
		rs = b.runs(jobID)
		for _, r := range rs {
			if r.State == kind.RunDispatching {
				return false
			}
			if r.State == kind.RunScheduled && r.ScheduledMs < b.clock.Now().UnixMilli()-1000 {
				return false // due a while ago: its claim is on the way
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond)
	return rs
}

func secs(ms int64) string { return time.UnixMilli(ms).UTC().Format("15:04:05.000") }

func fmtSeen(ds []dispatchSeen) string {
	s := ""
	for _, d := range ds {
		s += fmt.Sprintf("[%s job=%d sched=%s at=%s] ", d.Node, d.JobID, secs(d.ScheduledMs), d.At.UTC().Format("15:04:05.000"))
	}
	return s
}

func schedulerTrigger(jobID int64) scheduler.TriggerParams {
	return scheduler.TriggerParams{JobID: jobID}
}
