package scheduler

import (
	"context"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
)

// blockPolicy is what a job's block strategy does with a new run when
// other runs of the job are going on at a target that runs every dispatch
// at once (targets.Capabilities.Unqueued). HTTP executors keep a queue per
// job and apply the strategy themselves, as in XXL-JOB; there the
// scheduler consults no policy. The policies are small values in the
// manner of cron's job wrappers (SkipIfStillRunning, DelayIfStillRunning).
type blockPolicy interface {
	// keepsOrder: an older run of the job still waiting in a pool of this
	// replica goes first.
	keepsOrder() bool
	// busy decides for a new run while others (never empty) go on: nil
	// lets it go ahead, errRequeue offers it again when a run it waits for
	// ends here (runWaits) or at the next second, any other error fails it.
	busy(ctx context.Context, d *dispatcher, others []store.Run) error
}

// blockPolicyOf is the policy of a block strategy; an unknown or empty
// one is serial, the default.
func blockPolicyOf(b kind.Block) blockPolicy {
	switch b {
	case kind.BlockDiscardLater:
		return discardLater{}
	case kind.BlockCoverEarly:
		return coverEarly{}
	default:
		return serial{}
	}
}

// serial (SERIAL_EXECUTION) waits for the runs going on: the new run goes
// back to the ring and is offered again, in order, when one of them ends.
type serial struct{}

func (serial) keepsOrder() bool { return true }

func (serial) busy(context.Context, *dispatcher, []store.Run) error { return errRequeue }

// discardLater (DISCARD_LATER) fails the new run with XXL-JOB's message.
type discardLater struct{}

func (discardLater) keepsOrder() bool { return false }

func (discardLater) busy(_ context.Context, _ *dispatcher, others []store.Run) error {
	return fmt.Errorf("block strategy effect：Discard Later (run %d of this job is still running)", others[0].ID)
}

// coverEarly (COVER_EARLY) kills the runs going on and lets the new one
// go ahead; their outcomes come as kills.
type coverEarly struct{}

func (coverEarly) keepsOrder() bool { return false }

func (coverEarly) busy(ctx context.Context, d *dispatcher, others []store.Run) error {
	for _, o := range others {
		if o.Target == "" {
			continue
		}
		if drv, err := d.drivers.For(o.Target); err == nil {
			if err := drv.Kill(targets.WithGroup(ctx, o.GroupID), o.Target, o.ID, o.JobID); err != nil {
				d.warns.note("cover_early_kill_failed", logrus.Fields{"run_id": o.ID, "error": err.Error()}, "cover early: kill the running run")
			}
		}
	}
	return nil
}
