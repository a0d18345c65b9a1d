package scheduler

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/lifecycle"

	"github.com/jonboulle/clockwork"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
	"github.com/sirupsen/logrus"
)

// Alarm is one alarm to raise: a job's run failed for good, or the job
// recovered with a success after a failure alarm.
type Alarm struct {
	Kind     kind.AlarmEvent
	Job      store.Job
	Run      store.Run
	Channels []string
}

// Alarmer raises alarms without blocking the scheduler; it reports the
// outcome of each (kind.AlarmSent / kind.AlarmFailed) on the run itself.
type Alarmer interface {
	// Alarm queues an alarm and reports false when it could not (queue full).
	Alarm(ctx context.Context, a Alarm) bool
}

// followups does what comes after a run: a failed, timed-out or lost run is
// retried (a new run linked to it, same params and shard, after the job's
// backoff) until its retries are spent, then alarmed; a success triggers the
// job's child jobs and, after a failure alarm, a recovery alarm; runs still
// running long past their timeout, or whose executor or node is gone, are
// completed as lost. Failures are found by a scan (claimed with a
// compare-and-set, so one replica handles each, even across crashes);
// successes arrive from the ledger as they are recorded.
type followups struct {
	lifecycle.Loop
	cfg     Config
	node    string
	st      *store.Store
	clock   clockwork.Clock
	log     *logrus.Entry
	metrics *Metrics
	alarmer Alarmer
	ring    *ring
	drivers *targets.Registry
	trigger func(ctx context.Context, p TriggerParams) (store.Run, bool, error)

	succeeded chan []int64
	// interesting holds the jobs with child jobs; when none, successes are
	// not even looked at.
	interesting atomic.Pointer[map[int64]bool]
	lastLost    time.Time
	lastRefresh time.Time
}

func newFollowups() *followups {
	f := &followups{succeeded: make(chan []int64, 1024)}
	empty := map[int64]bool{}
	f.interesting.Store(&empty)
	return f
}

func (f *followups) Start(ctx context.Context) { f.Loop.Start(ctx, f.run) }
func (f *followups) Stop()                     { f.Loop.Stop() }

// onSucceeded is called with runs that just succeeded. It never blocks.
func (f *followups) onSucceeded(ids []int64) {
	if len(ids) == 0 || len(*f.interesting.Load()) == 0 {
		return
	}
	select {
	case f.succeeded <- ids:
	default:
		f.log.WithField("runs", len(ids)).Error("follow-up queue full: child jobs and recovery alarms of these successes are skipped")
	}
}

func (f *followups) run(ctx context.Context) {
	f.refresh(ctx)
	for {
		t := f.clock.NewTimer(f.cfg.FollowupInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case ids := <-f.succeeded:
			t.Stop()
			f.successes(ctx, ids)
		case <-t.Chan():
			f.tick(ctx)
		}
	}
}

func (f *followups) tick(ctx context.Context) {
	now := f.clock.Now()
	if now.Sub(f.lastRefresh) >= 5*time.Second || now.Before(f.lastRefresh) {
		f.refresh(ctx)
	}
	if err := f.failures(ctx); err != nil && ctx.Err() == nil {
		f.log.WithError(err).Warn("follow up failed runs")
	}
	if err := f.recoveries(ctx); err != nil && ctx.Err() == nil {
		f.log.WithError(err).Warn("look for recoveries")
	}
	if err := f.kills(ctx); err != nil && ctx.Err() == nil {
		f.log.WithError(err).Warn("carry out kill requests")
	}
	if now.Sub(f.lastLost) >= f.cfg.LostCheckInterval {
		f.lastLost = now
		if err := f.lost(ctx); err != nil && ctx.Err() == nil {
			f.log.WithError(err).Warn("look for lost runs")
		}
	}
}

func (f *followups) refresh(ctx context.Context) {
	m, err := f.st.JobIDsWithFollowups(ctx)
	if err != nil {
		if ctx.Err() == nil {
			f.log.WithError(err).Warn("list jobs with follow-ups")
		}
		return
	}
	f.interesting.Store(&m)
	f.lastRefresh = f.clock.Now()
}

// retryDelay is the wait before retry number attempt (1, 2, ...).
func retryDelay(j store.Job, attempt int) time.Duration {
	d := time.Duration(j.RetryDelaySec) * time.Second
	if j.RetryBackoff == kind.BackoffExponential && d > 0 {
		for i := 1; i < attempt; i++ {
			d *= 2
			if j.RetryMaxDelaySec > 0 && d >= time.Duration(j.RetryMaxDelaySec)*time.Second {
				break
			}
		}
		if j.RetryMaxDelaySec > 0 && d > time.Duration(j.RetryMaxDelaySec)*time.Second {
			d = time.Duration(j.RetryMaxDelaySec) * time.Second
		}
	}
	return d
}

// failures retries or alarms failed runs.
func (f *followups) failures(ctx context.Context) error {
	runs, err := f.st.RunListFailedPending(ctx, 500)
	if err != nil {
		return err
	}
	for _, r := range runs {
		ok, err := f.st.RunClaimFollowup(ctx, r.ID)
		if err != nil {
			return err
		}
		if !ok {
			continue // another replica has it
		}
		job, err := f.st.JobGet(ctx, r.JobID)
		if err != nil {
			f.log.WithError(err).WithField("run_id", r.ID).Warn("failed run of a job that is gone; no retry, no alarm")
			_ = f.st.RunSetAlarmStatus(ctx, r.ID, kind.AlarmNotNeeded)
			continue
		}
		if r.Attempt < job.RetryCount {
			if err := f.retry(ctx, job, r); err != nil {
				return err
			}
			if err := f.st.RunSetAlarmStatus(ctx, r.ID, kind.AlarmNotNeeded); err != nil {
				return err
			}
			continue
		}
		// Final: no retry left. One line per failed run, on the replica that
		// claimed its follow-up.
		f.log.WithFields(logrus.Fields{"run_id": r.ID, "job_id": job.ID, "state": r.State, "attempt": r.Attempt,
			"code": r.ResultCode, "message": r.Message}).Warn("run failed; no retry left")
		if len(job.AlarmChannels) == 0 {
			if err := f.st.RunSetAlarmStatus(ctx, r.ID, kind.AlarmNotNeeded); err != nil {
				return err
			}
			continue
		}
		if _, err := f.st.JobSetAlarmState(ctx, job.ID, kind.JobAlarmOK, kind.JobAlarmFailing); err != nil {
			return err
		}
		f.raise(ctx, Alarm{Kind: kind.AlarmFailure, Job: job, Run: r, Channels: job.AlarmChannels})
	}
	return nil
}

func (f *followups) raise(ctx context.Context, a Alarm) {
	if f.alarmer == nil || !f.alarmer.Alarm(ctx, a) {
		f.log.WithFields(logrus.Fields{"run_id": a.Run.ID, "job_id": a.Job.ID, "kind": a.Kind}).Error("alarm could not be queued")
		_ = f.st.RunSetAlarmStatus(ctx, a.Run.ID, kind.AlarmFailed)
	}
}

// retry creates the next attempt of a failed run: same params and shard,
// after the backoff, linked to it, and puts it in this node's ring.
func (f *followups) retry(ctx context.Context, job store.Job, r store.Run) error {
	attempt := r.Attempt + 1
	// The backoff counts from the failure, not from when this scan saw it.
	now := f.clock.Now()
	base := now
	if r.FinishedMs > 0 && r.FinishedMs < now.UnixMilli() {
		base = time.UnixMilli(r.FinishedMs)
	}
	at := base.Add(retryDelay(job, attempt))
	if at.Before(now) {
		at = now
	}
	nr, created, err := f.st.RunCreate(ctx, store.RunCreateParams{
		JobID: r.JobID, GroupID: r.GroupID, ScheduledMs: at.UnixMilli(), ShardIndex: r.ShardIndex, ShardTotal: r.ShardTotal,
		Attempt: attempt, TriggerType: kind.TriggerRetry, Owner: f.node, Handler: r.Handler, Params: r.Params,
		IdempotencyKey: fmt.Sprintf("retry-of-%d", r.ID), RetryOf: r.ID, CreatedMs: f.clock.Now().UnixMilli(),
	})
	if err != nil {
		return fmt.Errorf("retry run %d: %w", r.ID, err)
	}
	if !created {
		return nil
	}
	f.log.WithFields(logrus.Fields{"run_id": r.ID, "retry_run_id": nr.ID, "attempt": attempt, "at": at.UTC().Format(time.RFC3339)}).Info("retrying a failed run")
	j := job
	f.ring.push(fire{runID: nr.ID, scheduledMs: nr.ScheduledMs, shardIndex: nr.ShardIndex, shardTotal: nr.ShardTotal, attempt: attempt, params: nr.Params, job: &j})
	return nil
}

// recoveries sends a recovery alarm for each job in the failing alarm state
// whose latest finished run succeeded. It polls (the failing jobs are few),
// so it does not matter which replica saw the success, and the move back to
// "ok" is a compare-and-set, so one replica sends it.
func (f *followups) recoveries(ctx context.Context) error {
	ids, err := f.st.JobIDsFailing(ctx)
	if err != nil || len(ids) == 0 {
		return err
	}
	for _, id := range ids {
		r, ok, err := f.st.RunLatestFinished(ctx, id)
		if err != nil {
			return err
		}
		if !ok || r.State != kind.RunSucceeded {
			continue
		}
		job, err := f.st.JobGet(ctx, id)
		if err != nil {
			continue
		}
		if moved, err := f.st.JobSetAlarmState(ctx, id, kind.JobAlarmFailing, kind.JobAlarmOK); err != nil {
			return err
		} else if moved && len(job.AlarmChannels) > 0 {
			f.raise(ctx, Alarm{Kind: kind.AlarmRecovery, Job: job, Run: r, Channels: job.AlarmChannels})
		}
	}
	return nil
}

// kills stops the runs of this node that a kill was asked for on any
// replica (the API may be served by another one than the node running a
// local process). The driver reports the outcome; repeated kills are no-ops.
func (f *followups) kills(ctx context.Context) error {
	runs, err := f.st.RunListKillRequested(ctx, f.node)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if r.Target == "" {
			continue // not dispatched yet: the next tick sees its target
		}
		drv, err := f.drivers.For(r.Target)
		if err != nil {
			continue
		}
		if err := drv.Kill(ctx, r.Target, r.ID, r.JobID); err != nil {
			f.log.WithError(err).WithField("run_id", r.ID).Warn("kill a run asked for on another replica")
		}
	}
	return nil
}

// successes triggers child jobs.
func (f *followups) successes(ctx context.Context, ids []int64) {
	interesting := *f.interesting.Load()
	runs, err := f.st.RunGetMany(ctx, ids)
	if err != nil {
		f.log.WithError(err).Warn("read succeeded runs")
		return
	}
	for _, r := range runs {
		if !interesting[r.JobID] || r.State != kind.RunSucceeded {
			continue
		}
		job, err := f.st.JobGet(ctx, r.JobID)
		if err != nil {
			continue
		}
		for _, child := range job.ChildJobIDs {
			if child == job.ID {
				continue
			}
			_, _, err := f.trigger(ctx, TriggerParams{JobID: child, TriggerType: kind.TriggerParent, IdempotencyKey: store.ParentRunKey(r.ID)})
			if err != nil {
				f.log.WithError(err).WithFields(logrus.Fields{"run_id": r.ID, "child_job_id": child}).Warn("trigger child job")
			}
		}
	}
}

// lost completes runs that will not report: still running long past their
// timeout, on an executor gone from the registry, or on a node that died.
func (f *followups) lost(ctx context.Context) error {
	now := f.clock.Now()
	runs, err := f.st.RunListRunningSince(ctx, now.Add(-f.cfg.LostGrace).UnixMilli(), 1000)
	if err != nil || len(runs) == 0 {
		return err
	}
	execs, err := f.st.RegistryList(ctx, store.RegistryListParams{SinceMs: now.Add(-f.cfg.ExecutorDeadAfter).UnixMilli()})
	if err != nil {
		return err
	}
	live := map[string]bool{}
	for _, e := range execs {
		live[strings.TrimRight(e.Address, "/")] = true
	}
	nodes, err := f.st.NodeList(ctx)
	if err != nil {
		return err
	}
	deadNode := map[string]bool{}
	for _, n := range nodes {
		if n.Declared() || n.StoppedMs > 0 {
			deadNode[n.ID] = true
		}
	}
	jobs := map[int64]store.Job{}
	for _, r := range runs {
		j, ok := jobs[r.JobID]
		if !ok {
			if j, err = f.st.JobGet(ctx, r.JobID); err != nil {
				continue
			}
			jobs[r.JobID] = j
		}
		since := now.Sub(time.UnixMilli(r.DispatchedMs))
		var why string
		switch {
		case j.TimeoutSec > 0 && since > time.Duration(j.TimeoutSec)*time.Second+f.cfg.LostGrace:
			why = fmt.Sprintf("still running %s after dispatch, past its %ds timeout: no result will come; marked lost", since.Round(time.Second), j.TimeoutSec)
		case (strings.HasPrefix(r.Target, "http://") || strings.HasPrefix(r.Target, "https://")) && !live[strings.TrimRight(r.Target, "/")] && since > f.cfg.LostAfter:
			why = fmt.Sprintf("executor %s has been gone from the registry; its result is lost", r.Target)
		case strings.HasPrefix(r.Target, "local://") && deadNode[r.Owner]:
			why = fmt.Sprintf("scheduler node %s that ran this local process died; its result is lost", r.Owner)
		default:
			continue
		}
		ok, err := f.st.RunSetState(ctx, r.ID, kind.RunRunning, kind.RunLost, why, now.UnixMilli())
		if err != nil {
			return err
		}
		if ok {
			f.metrics.Lost.Inc()
			f.log.WithFields(logrus.Fields{"run_id": r.ID, "job_id": r.JobID}).Warn(why)
		}
	}
	return nil
}
