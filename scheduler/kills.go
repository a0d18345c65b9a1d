package scheduler

import (
	"context"

	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/lifecycle"
	"github.com/ringjob/ringjob/targets"
)

// kills carries out kill requests for the local processes this replica
// runs: the API may be served by another replica than the one running a
// local process, which is reported killed by its driver when its process
// group ends. A kill of any other target is sent by the replica that serves
// the request (service.KillRun), once: sending it here too would send a
// second /kill, which XXL-JOB executors carry out by job id, so it could
// stop the next run of the job. What kills does for those is settle the
// ones whose sender died before their answer: past its claim's deadline a
// kill counts as not accepted, and a result held for it is recorded as it
// came (store.RunKillSettleExpired), on whichever replica looks first.
type kills struct {
	lifecycle.Loop
	*followupDeps
	log *logrus.Entry
	// warns rate-limits the lines logged per run (a count per kind per
	// interval), as the dispatcher's are.
	warns *warnEvery
}

func (k *kills) Start(ctx context.Context) {
	k.Loop.Start(ctx, func(ctx context.Context) {
		every(ctx, k.clock, k.cfg.FollowupInterval, k.log, "carry out kill requests", k.tick)
	})
}

func (k *kills) Stop() { k.Loop.Stop() }

func (k *kills) tick(ctx context.Context) error {
	settled, err := k.st.RunKillSettleExpired(ctx, k.clock.Now().UnixMilli(), 500)
	if err != nil {
		return err
	}
	for _, s := range settled {
		fields := logrus.Fields{"run_id": s.RunID, "state": s.State}
		if s.Held != nil {
			fields["held"] = s.Held.State
		}
		k.warns.note("kill_unanswered", fields, "a kill's answer never came (its sender stopped): settled as not accepted")
	}
	runs, err := k.st.RunListKillRequested(ctx, k.node)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if r.Target == "" || !k.drivers.Capabilities(r.Target).OnDispatchingNode {
			continue // not dispatched yet, or not a process of this replica
		}
		drv, err := k.drivers.For(r.Target)
		if err != nil {
			continue
		}
		if err := drv.Kill(targets.WithGroup(ctx, r.GroupID), r.Target, r.ID, r.JobID); err != nil { // the run's group's credential
			k.warns.note("kill_failed", logrus.Fields{"run_id": r.ID, "error": err.Error()}, "kill a run asked for on another replica")
		}
	}
	return nil
}
