package scheduler

import (
	"context"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/lifecycle"
	"github.com/sirupsen/logrus"
)

// recoveries sends a recovery alarm for each job in the failing alarm state
// whose latest finished run succeeded. It reads the failing jobs (few, and
// indexed) every tick, so it does not matter which replica saw the success,
// and the move back to "ok" is a compare-and-set, so one replica sends it.
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
		if moved, err := r.st.JobSetAlarmState(ctx, id, kind.JobAlarmFailing, kind.JobAlarmOK); err != nil {
			return err
		} else if moved && len(job.AlarmChannels) > 0 {
			raise(ctx, r.followupDeps, r.log, Alarm{Kind: kind.AlarmRecovery, Job: job, Run: run, Channels: job.AlarmChannels})
		}
	}
	return nil
}
