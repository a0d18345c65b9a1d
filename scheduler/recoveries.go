package scheduler

import (
	"context"
	"errors"

	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/lifecycle"
	"github.com/ringjob/ringjob/store"
)

// recoveries owes a recovery alarm for each job in the failing alarm state
// whose latest finished run succeeded. It reads the failing jobs (few, and
// indexed) every tick, so it does not matter which replica saw the success.
// The move back to "ok" is a compare-and-set made in one transaction with
// the success run's pending alarm (store.JobRecoveredAlarm), so the alarm is
// owed exactly once; alarmSender sends it.
type recoveries struct {
	lifecycle.Loop
	*followupDeps
	log *logrus.Entry
}

func (r *recoveries) Start(ctx context.Context) {
	r.Loop.Start(ctx, func(ctx context.Context) {
		every(ctx, r.clock, r.cfg.FollowupInterval, r.log, "look for recoveries", r.tick)
	})
}

func (r *recoveries) Stop() { r.Loop.Stop() }

func (r *recoveries) tick(ctx context.Context) error {
	ids, err := r.st.JobIDsFailing(ctx)
	if err != nil || len(ids) == 0 {
		return err
	}
	for _, id := range ids {
		run, ok, err := r.st.RunLatestFinished(ctx, id)
		if err != nil {
			return err
		}
		if !ok || run.State != kind.RunSucceeded {
			continue
		}
		job, err := r.st.JobGet(ctx, id)
		if err != nil {
			continue
		}
		_, err = r.st.JobRecoveredAlarm(ctx, id, run.ID, len(job.AlarmChannels) > 0)
		switch {
		case errors.Is(err, store.ErrFollowupBusy):
			continue // its child jobs first; the next look records the recovery
		case err != nil:
			return err
		}
	}
	return nil
}
