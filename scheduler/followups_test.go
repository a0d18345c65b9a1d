package scheduler_test

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/alarm"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/store"
)

func (b *bundle) jobWith(name string, mutate func(*store.JobFields)) store.Job {
	b.t.Helper()
	f := store.JobFields{GroupID: b.group.ID, Name: name, ScheduleType: "none", TimeZone: "UTC", RouteStrategy: "first", ShardCount: 1}
	mutate(&f)
	j, err := b.st.JobCreate(context.Background(), store.JobCreateParams{JobFields: f, NowMs: b.clock.Now().UnixMilli()})
	require.NoError(b.t, err)
	return j
}

func TestRetriesWithBackoff(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", noon)
	j := b.jobWith("flaky", func(f *store.JobFields) {
		f.RetryCount, f.RetryBackoff, f.RetryDelaySec, f.RetryMaxDelaySec = 3, "exponential", 2, 5
	})
	n := b.startNode("a", func(c *scheduler.Config) { c.FollowupInterval = time.Second })
	n.rec.mu.Lock()
	n.rec.failFirst = map[int64]int{j.ID: 3}
	n.rec.mu.Unlock()
	b.settle(1)
	first, _, err := n.s.Trigger(context.Background(), scheduler.TriggerParams{JobID: j.ID})
	require.NoError(t, err)
	b.waitDispatched(1)
	b.waitSettledRuns(j.ID)
	for i := 0; i < 20; i++ {
		b.step(1, time.Second)
		b.waitSettledRuns(j.ID) // outcomes are written before the clock moves on
	}
	ds := b.waitDispatched(4)
	require.Len(t, ds, 4, fmtSeen(ds))
	// Fails at 12:00:00; retry 1 after 2 s, retry 2 after 4 s, retry 3 after 5 s (capped).
	var at []int64
	for _, d := range ds {
		at = append(at, d.ScheduledMs)
	}
	sort.Slice(at, func(i, k int) bool { return at[i] < at[k] })
	require.Equal(t, noon.UnixMilli(), at[0])
	gaps := []int64{at[1] - at[0], at[2] - at[1], at[3] - at[2]}
	// Each retry is due its delay after the failure it retries.
	require.Equal(t, []int64{2000, 4000, 5000}, gaps)
	rs := b.waitSettledRuns(j.ID)
	byAttempt := map[int]store.Run{}
	for _, r := range rs {
		byAttempt[r.Attempt] = r
	}
	require.Len(t, byAttempt, 4)
	require.Equal(t, kind.RunSucceeded, byAttempt[3].State, "the last retry succeeds")
	for a := 1; a <= 3; a++ {
		require.Equal(t, byAttempt[a-1].ID, byAttempt[a].RetryOf, "retry %d links to the run it retries", a)
		require.Equal(t, kind.TriggerRetry, byAttempt[a].TriggerType)
	}
	require.Equal(t, first.ID, byAttempt[1].RetryOf)
}

func TestChildChainAndNoDoubleFollowups(t *testing.T) {
	t.Parallel()
	eachServer(t, testChildChainAndNoDoubleFollowups)
}

func testChildChainAndNoDoubleFollowups(t *testing.T, dialect string) {
	b := setup(t, dialect, noon)
	c := b.jobWith("C", func(*store.JobFields) {})
	bj := b.jobWith("B", func(f *store.JobFields) { f.ChildJobIDs = []int64{c.ID} })
	a := b.jobWith("A", func(f *store.JobFields) { f.ChildJobIDs = []int64{bj.ID} })
	// Two replicas: the chain still runs each job once.
	n := b.startNode("a", nil)
	b.startNode("b", nil)
	b.step(2, 6*time.Second) // let both refresh their view of jobs with children
	_, _, err := n.s.Trigger(context.Background(), scheduler.TriggerParams{JobID: a.ID})
	require.NoError(t, err)
	var ds []dispatchSeen
	require.Eventually(t, func() bool {
		b.step(2, time.Second)
		ds = nil
		for _, nd := range b.nodes {
			ds = append(ds, nd.rec.all()...)
		}
		return len(ds) >= 3
	}, 20*time.Second, 10*time.Millisecond)
	b.step(2, 3*time.Second)
	ds = nil
	for _, nd := range b.nodes {
		ds = append(ds, nd.rec.all()...)
	}
	count := map[int64]int{}
	for _, d := range ds {
		count[d.JobID]++
	}
	require.Equal(t, map[int64]int{a.ID: 1, bj.ID: 1, c.ID: 1}, count, "A -> B -> C, each once")
	for _, r := range b.runs(c.ID) {
		require.Equal(t, kind.TriggerParent, r.TriggerType)
	}
}

func TestLostRunIsRetried(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", noon)
	j := b.jobWith("hangs", func(f *store.JobFields) { f.TimeoutSec, f.RetryCount = 5, 1 })
	n := b.startNode("a", func(c *scheduler.Config) {
		c.LostGrace, c.LostCheckInterval = 10*time.Second, 2*time.Second
	})
	n.rec.mu.Lock()
	n.rec.hold = map[int64]bool{j.ID: true}
	n.rec.mu.Unlock()
	b.settle(1)
	r, _, err := n.s.Trigger(context.Background(), scheduler.TriggerParams{JobID: j.ID})
	require.NoError(t, err)
	b.waitDispatched(1)
	require.Eventually(t, func() bool { got, _ := b.st.RunGet(context.Background(), r.ID); return got.State == kind.RunRunning }, 5*time.Second, 5*time.Millisecond)
	n.rec.mu.Lock()
	n.rec.hold = nil // the retry will report
	n.rec.mu.Unlock()
	b.step(1, 20*time.Second) // 5 s timeout + 10 s grace
	got, err := b.st.RunGet(context.Background(), r.ID)
	require.NoError(t, err)
	require.Equal(t, kind.RunLost, got.State, got.Message)
	require.Contains(t, got.Message, "past its 5s timeout")
	ds := b.waitDispatched(2)
	require.Len(t, ds, 2, "the lost run was retried once")
	var retry store.Run
	require.Eventually(t, func() bool {
		for _, x := range b.runs(j.ID) {
			if x.RetryOf == r.ID && x.State == kind.RunSucceeded {
				retry = x
				return true
			}
		}
		return false
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, 1, retry.Attempt)
}

// recordingAlarmer stands for the alarm dispatcher: it records every alarm
// and, when report is set, records the result on the run as the dispatcher
// does (scheduler.RecordAlarmResult); without it, it is a replica that dies
// in the middle of sending.
type recordingAlarmer struct {
	st     *store.Store
	report bool
	mu     sync.Mutex
	got    []scheduler.Alarm
}

func (a *recordingAlarmer) Alarm(ctx context.Context, al scheduler.Alarm) bool {
	a.mu.Lock()
	a.got = append(a.got, al)
	a.mu.Unlock()
	if a.report {
		_ = scheduler.RecordAlarmResult(a.st)(ctx, al.Run.ID, alarm.Result{Kind: al.Kind, Status: alarm.StatusSent})
	}
	return true
}

func (a *recordingAlarmer) alarms() []scheduler.Alarm {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]scheduler.Alarm(nil), a.got...)
}

// An alarm is owed in the database, not queued in memory: a replica that
// dies while sending it leaves it to another replica once its lease runs
// out, and the failure and the recovery are each alarmed once more, not
// zero times and not once per replica.
func TestAlarmsSurviveADeadReplica(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", noon)
	j := b.jobWith("alarmed", func(f *store.JobFields) { f.AlarmChannels = []string{"ops"} })
	dying := &recordingAlarmer{st: b.st}
	b.alarmer = dying
	a := b.startNode("a", nil)
	a.rec.mu.Lock()
	a.rec.failFirst = map[int64]int{j.ID: 1}
	a.rec.mu.Unlock()
	b.settle(1)
	failed, _, err := a.s.Trigger(context.Background(), scheduler.TriggerParams{JobID: j.ID})
	require.NoError(t, err)
	b.waitDispatched(1)
	b.waitSettledRuns(j.ID)
	b.step(1, 2*time.Second)
	require.Len(t, dying.alarms(), 1, "replica a took the failure alarm")
	require.Equal(t, kind.AlarmFailure, dying.alarms()[0].Kind)
	a.s.Stop(context.Background()) // dies before the alarm's result is recorded
	b.nodes = nil

	sending := &recordingAlarmer{st: b.st, report: true}
	b.alarmer = sending
	b.startNode("b", nil)
	b.step(1, 3*time.Second)
	require.Empty(t, sending.alarms(), "replica a's lease still runs")
	b.clock.Advance(15 * time.Minute)
	b.step(1, 3*time.Second)
	require.Len(t, sending.alarms(), 1, "the lease ran out: replica b sends the failure alarm")
	require.Equal(t, failed.ID, sending.alarms()[0].Run.ID)
	got, err := b.st.RunGet(context.Background(), failed.ID)
	require.NoError(t, err)
	require.Equal(t, kind.AlarmSent, got.AlarmStatus)
	b.step(1, 3*time.Second)
	require.Len(t, sending.alarms(), 1, "sent once")

	// The job recovers: one recovery alarm, for the success.
	ok, _, err := b.nodes[0].s.Trigger(context.Background(), scheduler.TriggerParams{JobID: j.ID})
	require.NoError(t, err)
	b.waitDispatched(1)
	b.waitSettledRuns(j.ID)
	b.step(1, 3*time.Second)
	all := sending.alarms()
	require.Len(t, all, 2)
	require.Equal(t, kind.AlarmRecovery, all[1].Kind)
	require.Equal(t, ok.ID, all[1].Run.ID)
	b.step(1, 3*time.Second)
	require.Len(t, sending.alarms(), 2, "the recovery is alarmed once")
	log, err := b.st.RunLogRead(context.Background(), ok.ID, 1)
	require.NoError(t, err)
	require.Contains(t, log.Content, "recovery alarm")
}

// A kill of a run on an executor is sent by the replica that serves the
// request (service.KillRun), once: the follow-up service of the run's owner
// does not send a second one (XXL-JOB executors kill by job id, so a second
// /kill could stop the job's next run).
func TestKillOfAnExecutorRunIsNotSentAgainByItsOwner(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", noon)
	j := b.jobWith("held", func(f *store.JobFields) {})
	n := b.startNode("a", func(c *scheduler.Config) { c.FollowupInterval = time.Second })
	n.rec.mu.Lock()
	n.rec.hold = map[int64]bool{j.ID: true}
	n.rec.mu.Unlock()
	b.settle(1)
	r, _, err := n.s.Trigger(context.Background(), scheduler.TriggerParams{JobID: j.ID})
	require.NoError(t, err)
	require.Eventually(t, func() bool { got, _ := b.st.RunGet(context.Background(), r.ID); return got.State == kind.RunRunning }, 5*time.Second, 5*time.Millisecond)
	ok, err := b.st.RunRequestKill(context.Background(), r.ID)
	require.NoError(t, err)
	require.True(t, ok)
	b.step(1, 5*time.Second)
	n.rec.mu.Lock()
	kills := n.rec.kills
	n.rec.mu.Unlock()
	require.Zero(t, kills, "the owner sent a second kill")
	got, err := b.st.RunGet(context.Background(), r.ID)
	require.NoError(t, err)
	require.Equal(t, kind.RunRunning, got.State, "the kill is the requesting replica's to record")
}

// A kill whose sender died before the answer (claimed, a result held for
// it, nothing more) is settled from the database by a live replica once
// its deadline has passed: not accepted, so the held result is recorded as
// it came, once, and the run's follow-up (its retry) is found as usual.
func TestAKillWhoseSenderDiedIsSettledAfterItsDeadline(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", noon)
	ctx := context.Background()
	j := b.jobWith("orphan-kill", func(f *store.JobFields) { f.RetryCount = 1 })
	n := b.startNode("a", func(c *scheduler.Config) { c.FollowupInterval = time.Second })
	n.rec.mu.Lock()
	n.rec.hold = map[int64]bool{j.ID: true}
	n.rec.mu.Unlock()
	b.settle(1)
	r, _, err := n.s.Trigger(ctx, scheduler.TriggerParams{JobID: j.ID})
	require.NoError(t, err)
	require.Eventually(t, func() bool { got, _ := b.st.RunGet(ctx, r.ID); return got.State == kind.RunRunning }, 5*time.Second, 5*time.Millisecond)
	// What a replica that sent the kill leaves behind when it dies before
	// the answer: the claim, and the executor's report held for it.
	deadline := b.clock.Now().Add(10 * time.Second).UnixMilli()
	_, err = b.st.RunKillClaim(ctx, []int64{r.ID}, deadline)
	require.NoError(t, err)
	held, err := b.st.RunKillHold(ctx, store.RunResult{ID: r.ID, State: kind.RunFailed, Code: 500, Message: "ended on its own",
		FinishedMs: b.clock.Now().UnixMilli(), Source: store.SourceCallback})
	require.NoError(t, err)
	require.True(t, held)

	b.step(1, 5*time.Second)
	got, err := b.st.RunGet(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, kind.RunRunning, got.State, "undecided before the deadline")
	b.step(1, 7*time.Second)
	got, err = b.st.RunGet(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, kind.RunFailed, got.State, got.Message)
	require.Equal(t, "ended on its own", got.Message)
	n.rec.mu.Lock()
	kills := n.rec.kills
	n.rec.mu.Unlock()
	require.Zero(t, kills, "nothing sent again")
	require.Eventually(t, func() bool {
		rs, err := b.st.RunList(ctx, store.RunListParams{JobID: j.ID, Limit: 10})
		require.NoError(t, err)
		return len(rs) == 2
	}, 5*time.Second, 10*time.Millisecond, "the failure is retried once, like any other")
}

// Per-run warnings are rate-limited like the dispatch warnings: 30 runs
// failing for good in one look log "run failed; no retry left" once; the
// next failure, 10 s later, logs one line that counts them all.
func TestNoRetryLeftIsLoggedOncePerInterval(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", noon)
	lines := &lineCounter{}
	b.logHook = lines
	j := b.jobWith("fails", func(f *store.JobFields) {})
	n := b.startNode("a", func(c *scheduler.Config) { c.FollowupInterval = time.Second })
	n.rec.mu.Lock()
	n.rec.failFirst = map[int64]int{j.ID: 1000}
	n.rec.mu.Unlock()
	b.settle(1)
	failAll := func(k int) {
		t.Helper()
		for i := 0; i < k; i++ {
			_, _, err := n.s.Trigger(context.Background(), scheduler.TriggerParams{JobID: j.ID})
			require.NoError(t, err)
		}
		require.Eventually(t, func() bool {
			for _, r := range b.runs(j.ID) {
				if r.State != kind.RunFailed {
					return false
				}
			}
			return true
		}, 10*time.Second, 5*time.Millisecond)
	}
	failAll(30)
	b.step(1, 3*time.Second)
	require.Equal(t, []string{"run failed; no retry left"}, lines.matching("no retry left"), "30 failures: one line")
	b.step(1, 8*time.Second)
	failAll(1)
	b.step(1, 3*time.Second)
	require.Equal(t, []string{"run failed; no retry left", "run failed; no retry left (30 in the last 10s)"}, lines.matching("no retry left"),
		"the next line counts the failures since the last one")
}

// lineCounter is a logrus hook that keeps every message.
type lineCounter struct {
	mu   sync.Mutex
	msgs []string
}

func (l *lineCounter) Levels() []logrus.Level { return logrus.AllLevels }

func (l *lineCounter) Fire(e *logrus.Entry) error {
	l.mu.Lock()
	l.msgs = append(l.msgs, e.Message)
	l.mu.Unlock()
	return nil
}

func (l *lineCounter) matching(part string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, m := range l.msgs {
		if strings.Contains(m, part) {
			out = append(out, m)
		}
	}
	return out
}
