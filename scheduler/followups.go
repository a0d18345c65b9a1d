package scheduler

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/lifecycle"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
)

// What follows a run is done by small services, one per file, each with the
// same shape (Start/Stop, one goroutine, a tick on the clock) and each
// finding its work in the database, never in memory:
//
//   - retries.go: a failed, timed-out or lost run is retried (a new run
//     linked to it, after the job's backoff) until its retries are spent,
//     then alarmed;
//   - children.go: a success triggers the job's child jobs;
//   - recoveries.go: the first success after a failure alarm owes a
//     recovery alarm;
//   - alarmsender.go: owed alarms (failures with no retry left, recoveries)
//     are sent under a lease, at least once;
//   - kills.go: kill requests made on any replica are carried out by the
//     replica that owns the run;
//   - lostruns.go: runs that will not report are recorded as lost.
//
// Retries, children and alarms are found through the followup column, which the
// write that records the outcome sets (see store.RunRecordOutcomes). A
// service acts first, idempotently (the new run carries an idempotency key
// derived from the run it follows), and marks the follow-up done after, so
// a replica dying at any instant leaves the follow-up pending for the next
// look, and the repeat finds the run it already made.

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

// followupDeps is what every follow-up service uses.
type followupDeps struct {
	cfg     Config
	node    string
	st      *store.Store
	clock   clockwork.Clock
	metrics *Metrics
	alarmer Alarmer
	ring    *ring
	drivers *targets.Registry
	record  func(ctx context.Context, outs []store.RunResult) ([]bool, error)
	trigger func(ctx context.Context, p TriggerParams) (store.Run, bool, error)
}

// followupScan is how many pending follow-ups one tick takes.
const followupScan = 500

// every runs tick at once and then every d until ctx ends; a tick's error
// is logged (the next tick tries again).
func every(ctx context.Context, clock clockwork.Clock, d time.Duration, log *logrus.Entry, what string, tick func(context.Context) error) {
	lifecycle.Every(ctx, clock, 0, d, tick, func(err error) { log.WithError(err).Warn(what) })
}
