package retention

import (
	"context"
	"time"

	"github.com/ringjob/ringjob/store"
)

// partitions keeps the day partitions of runs (retention.partitioned):
// it creates today's and the next days' partitions ahead of time, and drops
// each day partition older than the longest retention in force, whole, when
// none of its runs is still needed. A partition that still holds needed runs
// is emptied of the others by rows and dropped on a later cycle, once those
// are done too. Every step looks at what exists first, so it is idempotent
// across replicas and restarts.
func (w *Worker) partitions(ctx context.Context, pol policy, res *Result) error {
	now := w.o.Clock.Now()
	created, err := w.o.Store.RunPartitionsEnsure(ctx, store.RunPartitionsEnsureParams{NowMs: now.UnixMilli(), AheadDays: w.o.Config.PartitionsAhead})
	res.Created = append(res.Created, created...)
	w.o.Metrics.Partitions.WithLabelValues("created").Add(float64(len(created)))
	if len(created) > 0 {
		w.o.Log.WithField("partitions", created).Info("created run partitions")
	}
	if err != nil {
		return err
	}
	parts, _, err := w.o.Store.RunPartitions(ctx)
	if err != nil {
		return err
	}
	cutoff := now.Add(-pol.longest()).UnixMilli()
	k := &keepers{w: w}
	for _, p := range parts {
		if p.BeforeMs == 0 || p.BeforeMs > cutoff || ctx.Err() != nil {
			continue
		}
		if err := k.refresh(ctx); err != nil {
			return err
		}
		needed := make([]int64, 0, len(k.needed))
		for id := range k.needed {
			needed = append(needed, id)
		}
		sum, err := w.o.Store.RunPartitionSummarize(ctx, p.Name, needed)
		if err != nil {
			return err
		}
		if sum.MaxID == 0 || sum.Needed == 0 && sum.MaxID <= k.counted {
			t := time.Now()
			if err := w.o.Store.RunPartitionDrop(ctx, p.Name, sum.MaxID); err != nil {
				return err
			}
			res.Dropped = append(res.Dropped, p.Name)
			w.o.Metrics.Partitions.WithLabelValues("dropped").Inc()
			w.o.Log.WithField("partition", p.Name).Info("dropped run partition")
			if !w.spaceDrop(ctx, time.Since(t)) {
				return ctx.Err()
			}
			continue
		}
		// Some runs in it are still needed: delete the others by rows.
		n, err := w.purgePartition(ctx, p.Name, k)
		res.Runs += n.Runs
		res.Logs += n.Logs
		if err != nil {
			return err
		}
	}
	// The logs of runs that are all gone go with their partition.
	for ctx.Err() == nil {
		t := time.Now()
		name, err := w.o.Store.RunLogPartitionDropFirst(ctx)
		if err != nil {
			return err
		}
		if name == "" {
			break
		}
		res.Dropped = append(res.Dropped, name)
		w.o.Metrics.Partitions.WithLabelValues("dropped").Inc()
		w.o.Log.WithField("partition", name).Info("dropped run log partition")
		if !w.spaceDrop(ctx, time.Since(t)) {
			return ctx.Err()
		}
	}
	w.o.Metrics.BacklogAge.WithLabelValues(tableRuns).Set(0)
	return nil
}

// spaceDrop counts a drop's time as the purge's and pauses after it
// (pauseAfterDrop); false when ctx ended.
func (w *Worker) spaceDrop(ctx context.Context, took time.Duration) bool {
	w.busy += took
	return pause(ctx, w.pauseAfterDrop(took))
}

func (w *Worker) purgePartition(ctx context.Context, name string, k *keepers) (store.RunPurgeResult, error) {
	var total store.RunPurgeResult
	var after int64
	for ctx.Err() == nil {
		batch, err := w.o.Store.RunAgesInPartition(ctx, name, after, w.o.Config.BatchSize)
		if err != nil || len(batch) == 0 {
			return total, err
		}
		var del []int64
		for _, a := range batch {
			after = a.ID
			if !k.keep(a) {
				del = append(del, a.ID)
			}
		}
		if len(del) == 0 {
			continue
		}
		t := time.Now()
		n, err := w.o.Store.RunPurge(ctx, del)
		took := time.Since(t)
		w.busy += took
		total.Runs += n.Runs
		total.Logs += n.Logs
		w.o.Metrics.Purged.WithLabelValues(tableRuns).Add(float64(n.Runs))
		if err != nil {
			return total, err
		}
		if !pause(ctx, w.pauseAfter(took)) {
			return total, ctx.Err()
		}
	}
	return total, ctx.Err()
}
