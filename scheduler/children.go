package scheduler

import (
	"context"
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/lifecycle"
	"github.com/ringjob/ringjob/store"
)

// children triggers the child jobs of succeeded runs. A run's success is a
// pending follow-up when its job had child jobs as the run was created (the
// outcome write sets it); each child is triggered with an idempotency key
// derived from the parent run, and the follow-up is marked done only after
// every child exists, so each child runs once even across crashes.
type children struct {
	lifecycle.Loop
	*followupDeps
	log *logrus.Entry
	// warns rate-limits the lines logged per run (a count per kind per
	// interval), as the dispatcher's are.
	warns *warnEvery
}

func (c *children) Start(ctx context.Context) {
	c.Loop.Start(ctx, func(ctx context.Context) {
		every(ctx, c.clock, c.cfg.FollowupInterval, c.log, "trigger child jobs", c.tick)
	})
}

func (c *children) Stop() { c.Loop.Stop() }

func (c *children) tick(ctx context.Context) error {
	runs, err := c.st.RunListFollowups(ctx, []kind.RunState{kind.RunSucceeded}, followupScan)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if err := c.follow(ctx, r); err != nil {
			if ctx.Err() != nil {
				return err
			}
			c.warns.note("trigger_children_failed", logrus.Fields{"run_id": r.ID, "error": err.Error()}, "trigger child jobs; trying again at the next look")
		}
	}
	return nil
}

func (c *children) follow(ctx context.Context, r store.Run) error {
	job, err := c.st.JobGet(ctx, r.JobID)
	if err != nil {
		c.warns.note("job_gone", logrus.Fields{"run_id": r.ID, "error": err.Error()}, "succeeded run of a job that is gone; no child jobs")
		_, err := c.st.RunFollowupDone(ctx, r.ID)
		return err
	}
	for _, child := range job.ChildJobIDs {
		if child == job.ID {
			continue
		}
		_, _, err := c.trigger(ctx, TriggerParams{JobID: child, TriggerType: kind.TriggerParent, IdempotencyKey: store.ParentRunKey(r.ID)})
		switch {
		case errors.Is(err, store.ErrNotFound):
			// A child deleted since must not hold up its siblings or the
			// follow-up forever.
			c.warns.note("child_gone", logrus.Fields{"run_id": r.ID, "child_job_id": child, "error": err.Error()}, "child job is gone; not triggered")
		case err != nil:
			return fmt.Errorf("trigger child job %d of run %d: %w", child, r.ID, err)
		}
	}
	_, err = c.st.RunFollowupDone(ctx, r.ID)
	return err
}
