package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/apitypes"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/lifecycle"
	"github.com/ringjob/ringjob/store"
)

// Deliverer sends one failure record to a failure destination
// (destinations.Sender). id is the same on every try of one record.
type Deliverer interface {
	Deliver(ctx context.Context, destination string, record []byte, id string) error
}

// deliveries sends failure records to failure destinations, at least once:
//   - a misfired fire of a job with a destination is pending as a follow-up
//     (armed when its run was inserted); the record is owed, then the
//     follow-up marked done;
//   - a run that failed for good is owed by the retries service;
//   - owed records are sent under a lease by any replica, and tried again
//     with a growing delay (deliveryBackoff) until the destination takes
//     them. A replica dying after a send and before recording it sends the
//     record again: destinations see a record at least once, and can tell
//     repeats by its run_id (SQS FIFO queues drop them by themselves).
type deliveries struct {
	lifecycle.Loop
	*followupDeps
	sender Deliverer
	log    *logrus.Entry
	warns  *warnEvery
}

// Delivery pacing: one send may take deliveryTimeout, under a lease of
// deliveryLease; up to deliveryScan records a tick.
const (
	deliveryTimeout = 15 * time.Second
	deliveryLease   = time.Minute
	deliveryScan    = 100
	maxDeliveryWait = 5 * time.Minute
)

func (d *deliveries) Start(ctx context.Context) {
	d.Loop.Start(ctx, func(ctx context.Context) {
		every(ctx, d.clock, d.cfg.FollowupInterval, d.log, "deliver failure records", d.tick)
	})
}

func (d *deliveries) Stop() { d.Loop.Stop() }

func (d *deliveries) tick(ctx context.Context) error {
	runs, err := d.st.RunListFollowups(ctx, []kind.RunState{kind.RunMisfired}, followupScan)
	if err != nil {
		return err
	}
	for _, run := range runs {
		job, err := d.st.JobGet(ctx, run.JobID)
		if err == nil {
			err = d.oweFailureRecord(ctx, job, run)
		}
		if err != nil && ctx.Err() == nil {
			d.warns.note("owe_failed", logrus.Fields{"run_id": run.ID, "error": err.Error()}, "owe the failure record of a misfired run; trying again at the next look")
			continue
		}
		if _, err := d.st.RunFollowupDone(ctx, run.ID); err != nil {
			return err
		}
	}
	if d.sender == nil {
		return nil
	}
	now := d.clock.Now()
	due, err := d.st.FailureDeliveryListDue(ctx, now.UnixMilli(), deliveryScan)
	if err != nil {
		return err
	}
	for _, dl := range due {
		if err := d.send(ctx, dl); err != nil {
			return err
		}
	}
	if n, err := d.st.FailureDeliveryPending(ctx); err == nil {
		d.metrics.DeliveriesPending.Set(float64(n))
	}
	return nil
}

// send tries one owed record under a lease; a refusal by the destination
// is recorded for a later try, only a database error is returned.
func (d *deliveries) send(ctx context.Context, dl store.FailureDelivery) error {
	now := d.clock.Now()
	ok, err := d.st.FailureDeliveryLease(ctx, dl.ID, now.UnixMilli(), now.Add(deliveryLease).UnixMilli())
	if err != nil || !ok {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, deliveryTimeout)
	serr := d.sender.Deliver(sctx, dl.Destination, []byte(dl.Record), "ringjob-run-"+strconv.FormatInt(dl.RunID, 10))
	cancel()
	attempts := dl.Attempts + 1
	if serr == nil {
		d.metrics.Deliveries.WithLabelValues("delivered").Inc()
		return d.st.FailureDeliveryDelivered(ctx, dl.ID, attempts, d.clock.Now().UnixMilli())
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	d.metrics.Deliveries.WithLabelValues("failed").Inc()
	next := d.clock.Now().Add(deliveryBackoff(attempts))
	d.warns.note("delivery_failed", logrus.Fields{"run_id": dl.RunID, "attempts": attempts, "next": next.UTC().Format(time.RFC3339), "error": serr.Error()},
		"failure record not delivered; trying again later")
	return d.st.FailureDeliveryRetry(ctx, dl.ID, attempts, next.UnixMilli(), serr.Error())
}

// deliveryBackoff is the wait after the n-th failed try: doubling from
// one second, at most maxDeliveryWait.
func deliveryBackoff(n int) time.Duration {
	if n > 9 {
		return maxDeliveryWait
	}
	return min(maxDeliveryWait, time.Second<<(n-1))
}

// oweFailureRecord writes the record of run owed to its failure
// destination (the job's, else its group's); nothing without one. Made
// once per run, whoever calls it how often.
func (fd *followupDeps) oweFailureRecord(ctx context.Context, job store.Job, run store.Run) error {
	g, err := fd.st.GroupGet(ctx, job.GroupID)
	if err != nil {
		return fmt.Errorf("owe the failure record of run %d: read group %d: %w", run.ID, job.GroupID, err)
	}
	dest := job.FailureDestination
	if dest == "" {
		dest = g.FailureDestination
	}
	if dest == "" {
		return nil
	}
	rec, err := marshalFailureRecord(FailureRecordOf(g, job, run))
	if err != nil {
		return err
	}
	_, err = fd.st.FailureDeliveryCreate(ctx, run.ID, dest, rec, fd.clock.Now().UnixMilli())
	return err
}

// FailureRecordOf is the record a failure destination receives for run.
func FailureRecordOf(g store.Group, job store.Job, run store.Run) apitypes.FailureRecord {
	ts := func(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }
	r := apitypes.FailureRecord{
		Version: 1, RunID: run.ID, JobID: job.ID, Job: g.AppName + "/" + job.Name, Group: g.AppName,
		ScheduledAt: ts(run.ScheduledMs - run.WindowOffsetMs), FireAt: ts(run.ScheduledMs),
		Outcome: string(run.State), Message: run.Message, Attempt: run.Attempt, Trigger: string(run.TriggerType), Target: run.Target,
	}
	if run.FinishedMs > 0 {
		r.FinishedAt = ts(run.FinishedMs)
	}
	return r
}

func marshalFailureRecord(r apitypes.FailureRecord) (string, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encode the failure record of run %d: %w", r.RunID, err)
	}
	return string(b), nil
}

// completions deletes jobs whose after_completion is delete once their
// schedule has no fire left and their last run has nothing left to follow
// (see store.JobDeleteCompleted), from the database on every look.
type completions struct {
	lifecycle.Loop
	*followupDeps
	cache *scheduleCache
	log   *logrus.Entry
}

func (c *completions) Start(ctx context.Context) {
	c.Loop.Start(ctx, func(ctx context.Context) {
		every(ctx, c.clock, c.cfg.FollowupInterval, c.log, "delete completed jobs", c.tick)
	})
}

func (c *completions) Stop() { c.Loop.Stop() }

func (c *completions) tick(ctx context.Context) error {
	jobs, err := c.st.JobListDeleteAfterCompletion(ctx, followupScan)
	if err != nil {
		return err
	}
	now := c.clock.Now()
	for i := range jobs {
		j := &jobs[i]
		sched, err := c.cache.get(j)
		if err != nil {
			continue // the pre-read reports a schedule that does not parse
		}
		if _, more := sched.Next(now); more {
			continue // stopped by hand, not completed
		}
		deleted, err := c.st.JobDeleteCompleted(ctx, *j, now.UnixMilli())
		if err != nil {
			return err
		}
		if deleted {
			c.log.WithFields(logrus.Fields{"job_id": j.ID, "job": j.Name}).Info("deleted a job after its last fire (after_completion: delete)")
		}
	}
	return nil
}
