package scheduler

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/lifecycle"
	"github.com/ringjob/ringjob/store"
)

// alarmSender sends the alarms the database says are owed: runs whose
// follow-up is an alarm (followup = 3), set by the retries service for a
// failure with no retry left and by the recoveries service for the success
// that ends a job's failing state, each in the write that decides it. It
// takes each alarm under a lease (alarm_lease_ms) before handing it to the
// Alarmer, and the alarm's result (RecordAlarmResult) closes the follow-up.
//
// Semantics: at least once. An alarm whose replica dies before it is
// leased is sent by another replica at the next look; one whose replica
// dies after the lease and before its result is recorded is sent again by
// another replica when the lease runs out (alarmLease), so a send that was
// already on its way when the replica died goes out twice. Never zero times
// for a replica's death; an alarm every channel refused is recorded failed
// and not tried again.
type alarmSender struct {
	lifecycle.Loop
	*followupDeps
	log *logrus.Entry
	// warns rate-limits the lines logged per run (a count per kind per
	// interval), as the dispatcher's are.
	warns *warnEvery
}

// alarmLease outlasts the alarm dispatcher's own retries of one alarm
// (5 attempts of up to a minute each, with backoff), so a live replica's
// alarm is not taken from it while it is still trying.
const alarmLease = 15 * time.Minute

func (a *alarmSender) Start(ctx context.Context) {
	a.Loop.Start(ctx, func(ctx context.Context) {
		every(ctx, a.clock, a.cfg.FollowupInterval, a.log, "send pending alarms", a.tick)
	})
}

func (a *alarmSender) Stop() { a.Loop.Stop() }

func (a *alarmSender) tick(ctx context.Context) error {
	now := a.clock.Now()
	runs, err := a.st.RunListAlarmsDue(ctx, now.UnixMilli(), followupScan)
	if err != nil {
		return err
	}
	for _, run := range runs {
		if err := a.send(ctx, run, now); err != nil {
			if ctx.Err() != nil {
				return err
			}
			a.warns.note("alarm_send_failed", logrus.Fields{"run_id": run.ID, "error": err.Error()}, "send a pending alarm; trying again at the next look")
		}
	}
	return nil
}

func (a *alarmSender) send(ctx context.Context, run store.Run, now time.Time) error {
	ev := kind.AlarmRecovery
	status := kind.AlarmNone // a recovery has no alarm status of its own
	if run.State.Retryable() {
		ev, status = kind.AlarmFailure, kind.AlarmNotNeeded
	}
	job, err := a.st.JobGet(ctx, run.JobID)
	if err != nil || len(job.AlarmChannels) == 0 || a.alarmer == nil {
		// The job is gone or no longer alarms: nothing is owed.
		_, derr := a.st.RunAlarmDone(ctx, run.ID, status)
		return derr
	}
	leased, err := a.st.RunAlarmLease(ctx, run.ID, now.UnixMilli(), now.Add(alarmLease).UnixMilli())
	if err != nil || !leased {
		return err // another replica is sending it
	}
	if !a.alarmer.Alarm(ctx, Alarm{Kind: ev, Job: job, Run: run, Channels: job.AlarmChannels}) {
		a.warns.noteAt(logrus.ErrorLevel, "alarm_not_queued", logrus.Fields{"run_id": run.ID, "job_id": job.ID, "kind": ev}, "alarm could not be queued; trying again at the next look")
		return a.st.RunAlarmRelease(ctx, run.ID)
	}
	return nil
}
