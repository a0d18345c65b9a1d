package scheduler

import (
	"context"

	"github.com/ringjob/ringjob/internal/lifecycle"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
	"github.com/sirupsen/logrus"
)

// kills carries out kill requests for the runs this replica owns: the API
// may be served by another replica than the one running a local process.
// A kill the target accepts makes the run killed at once (see store.KilledResult);
// a local run is reported killed by its driver when its process group ends.
type kills struct {
	lifecycle.Loop
	*followupDeps
	log *logrus.Entry
}

func (k *kills) Start(ctx context.Context) {
	k.Loop.Start(ctx, func(ctx context.Context) {
		every(ctx, k.clock, k.cfg.FollowupInterval, k.log, "carry out kill requests", k.tick)
	})
}

func (k *kills) Stop() { k.Loop.Stop() }

func (k *kills) tick(ctx context.Context) error {
	runs, err := k.st.RunListKillRequested(ctx, k.node)
	if err != nil {
		return err
	}
	var killed []store.RunResult
	for _, r := range runs {
		if r.Target == "" {
			continue // not dispatched yet: the next tick sees its target
		}
		drv, err := k.drivers.For(r.Target)
		if err != nil {
			continue
		}
		if err := drv.Kill(targets.WithGroup(ctx, r.GroupID), r.Target, r.ID, r.JobID); err != nil { // the run's group's credential
			k.log.WithError(err).WithField("run_id", r.ID).Warn("kill a run asked for on another replica")
			continue
		}
		if scheme, _ := targets.Scheme(r.Target); scheme != "local" {
			killed = append(killed, store.KilledResult(r.ID, k.clock.Now().UnixMilli()))
		}
	}
	_, err = k.record(ctx, killed)
	return err
}
