package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/lifecycle"
	"github.com/ringjob/ringjob/store"
)

// retries follows failed, timed-out and lost runs: a new attempt while the
// job has retries left, else a pending failure alarm (sent by alarmSender). Each failure is retried once:
// the retry run's idempotency key is derived from the failed run, and the
// failure is marked done only after the retry exists.
type retries struct {
	lifecycle.Loop
	*followupDeps
	log *logrus.Entry
	// warns rate-limits the lines logged per run (a count per kind per
	// interval), as the dispatcher's are.
	warns *warnEvery
}

func (r *retries) Start(ctx context.Context) {
	r.Loop.Start(ctx, func(ctx context.Context) {
		every(ctx, r.clock, r.cfg.FollowupInterval, r.log, "follow up failed runs", r.tick)
	})
}

func (r *retries) Stop() { r.Loop.Stop() }

func (r *retries) tick(ctx context.Context) error {
	runs, err := r.st.RunListFollowups(ctx, store.FailedStates, followupScan)
	if err != nil {
		return err
	}
	for _, run := range runs {
		if err := r.follow(ctx, run); err != nil {
			if ctx.Err() != nil {
				return err
			}
			r.warns.note("followup_failed", logrus.Fields{"run_id": run.ID, "error": err.Error()}, "follow up a failed run; trying again at the next look")
		}
	}
	return nil
}

func (r *retries) follow(ctx context.Context, run store.Run) error {
	job, err := r.st.JobGet(ctx, run.JobID)
	if err != nil {
		r.warns.note("job_gone", logrus.Fields{"run_id": run.ID, "error": err.Error()}, "failed run of a job that is gone; no retry, no alarm")
		if _, err := r.st.RunFollowupDone(ctx, run.ID); err != nil {
			return err
		}
		return r.st.RunSetAlarmStatus(ctx, run.ID, kind.AlarmNotNeeded)
	}
	fresh := true
	if job.MaxEventAgeSec > 0 {
		first, err := r.firstAttempt(ctx, run)
		if err != nil {
			return err
		}
		fresh = !tooOld(&job, first.ScheduledMs-first.WindowOffsetMs, r.clock.Now().UnixMilli())
	}
	// A workflow's node is retried by the workflow engine, as the node says.
	if run.Attempt < job.RetryCount && fresh && run.TriggerType != kind.TriggerWorkflow {
		if err := r.retry(ctx, job, run); err != nil {
			return err
		}
		if _, err := r.st.RunFollowupDone(ctx, run.ID); err != nil {
			return err
		}
		return r.st.RunSetAlarmStatus(ctx, run.ID, kind.AlarmNotNeeded)
	}
	// The last attempt failed: one log line, on the replica that moves the
	// follow-up on; the alarm, if the job has channels, becomes pending in
	// that same write and the alarm service sends it (at least once, from
	// any replica; see alarmSender). The failure record owed to the job's
	// failure destination is written first, so the follow-up stays pending
	// until it exists.
	if err := r.oweFailureRecord(ctx, job, run); err != nil {
		return err
	}
	if len(job.AlarmChannels) == 0 {
		done, err := r.st.RunFollowupDone(ctx, run.ID)
		if err != nil || !done {
			return err
		}
		r.logLastFailure(job, run)
		return r.st.RunSetAlarmStatus(ctx, run.ID, kind.AlarmNotNeeded)
	}
	// The job is failing before its alarm is owed, so the recovery that
	// follows finds it failing whichever of the two a dying replica did.
	if _, err := r.st.JobSetAlarmState(ctx, job.ID, kind.JobAlarmOK, kind.JobAlarmFailing); err != nil {
		return err
	}
	owed, err := r.st.RunFollowupToAlarm(ctx, run.ID)
	if err != nil || !owed {
		return err
	}
	r.logLastFailure(job, run)
	return nil
}

// firstAttempt follows a retry back to the run of its fire: a fire's age
// (max_event_age_sec) counts from that run's schedule time.
func (r *retries) firstAttempt(ctx context.Context, run store.Run) (store.Run, error) {
	for i := 0; run.RetryOf != 0 && i <= 2*maxRetryChain; i++ {
		prev, err := r.st.RunGet(ctx, run.RetryOf)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return run, nil // purged: the oldest there is
			}
			return run, fmt.Errorf("read run %d, retried by run %d: %w", run.RetryOf, run.ID, err)
		}
		run = prev
	}
	return run, nil
}

// maxRetryChain bounds the walk of firstAttempt (a job has at most this many retries).
const maxRetryChain = 10

func (r *retries) logLastFailure(job store.Job, run store.Run) {
	r.warns.note("no_retry_left", logrus.Fields{"run_id": run.ID, "job_id": job.ID, "state": run.State, "attempt": run.Attempt,
		"code": run.ResultCode, "message": run.Message}, "run failed; no retry left")
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

// retry creates the next attempt of a failed run: same params and shard,
// after the backoff, linked to it, and puts it in this node's ring. When it
// exists already (a replica made it and died before marking the failure
// done), the run is left to its owner, or to the takeover of a dead one.
func (r *retries) retry(ctx context.Context, job store.Job, run store.Run) error {
	attempt := run.Attempt + 1
	// The backoff counts from the failure, not from when this scan saw it.
	now := r.clock.Now()
	base := now
	if run.FinishedMs > 0 && run.FinishedMs < now.UnixMilli() {
		base = time.UnixMilli(run.FinishedMs)
	}
	at := base.Add(retryDelay(job, attempt))
	if at.Before(now) {
		at = now
	}
	nr, created, err := r.st.RunCreate(ctx, store.RunCreateParams{
		JobID: run.JobID, GroupID: run.GroupID, ScheduledMs: at.UnixMilli(), ShardIndex: run.ShardIndex, ShardTotal: run.ShardTotal,
		Attempt: attempt, TriggerType: kind.TriggerRetry, Owner: r.node, Handler: run.Handler, Params: run.Params,
		IdempotencyKey: store.RetryRunKey(run.ID), RetryOf: run.ID, CreatedMs: now.UnixMilli(),
		FollowSuccess: len(job.ChildJobIDs) > 0,
	})
	if err != nil {
		return fmt.Errorf("retry run %d: %w", run.ID, err)
	}
	if !created {
		return nil
	}
	r.warns.noteAt(logrus.InfoLevel, "retrying", logrus.Fields{"run_id": run.ID, "retry_run_id": nr.ID, "attempt": attempt, "at": at.UTC().Format(time.RFC3339)}, "retrying a failed run")
	j := job
	r.ring.push(fire{runID: nr.ID, scheduledMs: nr.ScheduledMs, shardIndex: nr.ShardIndex, shardTotal: nr.ShardTotal, attempt: attempt, params: nr.Params, job: &j})
	return nil
}
