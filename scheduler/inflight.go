package scheduler

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/ringjob/ringjob/store"
)

// inflightQuery asks for the runs of a job in flight other than run.
type inflightQuery struct{ job, run int64 }

// inflightBatch is the largest number of questions one statement answers.
const inflightBatch = 1000

// inflightClockMargin is how far the replicas' clocks may disagree for the
// in-flight reader to see every run in flight (see newInflightReader).
const inflightClockMargin = time.Second

// newInflightReader answers the trigger pool workers' "what else of this job
// is in flight?" (block strategies of queueless targets, max in flight)
// with one statement per batch (store.RunListInFlightMany) instead of one
// per dispatch: at a thousand dispatches a second the reads one at a time
// held the database pool, and runs that waited for them made the next
// second's runs of their jobs wait in turn.
//
// It asks only about runs whose fire time has come by now plus
// inflightClockMargin: a run is sent once its fire time has come on the
// replica that sends it, so with the replicas' clocks within the margin of
// each other nothing in flight is left out, and the runs the pre-read
// planned for the next seconds are not read.
func newInflightReader(st *store.Store, clock clockwork.Clock) *batcher[inflightQuery, []store.Run] {
	return newBatcher(inflightBatch, func(ctx context.Context, qs []inflightQuery) ([][]store.Run, error) {
		ctx, cancel := context.WithTimeout(ctx, claimTimeout)
		defer cancel()
		jobs := make([]int64, 0, len(qs))
		seen := make(map[int64]bool, len(qs))
		for _, q := range qs {
			if !seen[q.job] {
				seen[q.job] = true
				jobs = append(jobs, q.job)
			}
		}
		byJob, err := st.RunListInFlightMany(ctx, jobs, clock.Now().Add(inflightClockMargin).UnixMilli())
		if err != nil {
			return nil, err
		}
		out := make([][]store.Run, len(qs))
		for i, q := range qs {
			for _, r := range byJob[q.job] {
				if r.ID != q.run {
					out[i] = append(out[i], r)
				}
			}
		}
		return out, nil
	})
}

// logBatch is the largest number of log appends gathered into one write.
const logBatch = 2000

// newLogWriter appends drivers' lines to run logs many runs at a time
// (store.RunLogAppendMany: two statements per 500 appends): a Lambda
// invoke or a local process writes a line or two per run, and one
// INSERT ... SELECT each was most of those targets' statements.
func newLogWriter(st *store.Store) *batcher[store.RunLogEntry, struct{}] {
	return newBatcher(logBatch, func(ctx context.Context, es []store.RunLogEntry) ([]struct{}, error) {
		ctx, cancel := context.WithTimeout(ctx, outcomeTimeout)
		defer cancel()
		return make([]struct{}, len(es)), st.RunLogAppendMany(ctx, es)
	})
}
