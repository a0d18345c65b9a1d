package retention

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/lifecycle"
	"github.com/ringjob/ringjob/store"
)

// Store is what the worker needs of the storage seam.
type Store interface {
	LeaseTake(ctx context.Context, p store.LeaseTakeParams) (bool, error)
	LeaseRelease(ctx context.Context, name, holder string) error
	GroupList(ctx context.Context) ([]store.Group, error)
	RunAgesAfter(ctx context.Context, afterID int64, limit int) ([]store.RunAge, error)
	RunAgesByID(ctx context.Context, ids []int64) ([]store.RunAge, error)
	RunsNeeded(ctx context.Context, upToID int64) (map[int64]bool, error)
	RunPurge(ctx context.Context, ids []int64) (store.RunPurgeResult, error)
	RunLogRunsAfter(ctx context.Context, afterID int64, limit int) ([]int64, error)
	RunLogPurge(ctx context.Context, runIDs []int64) (int64, error)
	ReportMarkGet(ctx context.Context) (store.ReportMark, error)
	RunPartitionsEnsure(ctx context.Context, p store.RunPartitionsEnsureParams) ([]string, error)
	RunPartitions(ctx context.Context) ([]store.RunPartition, bool, error)
	RunPartitionSummarize(ctx context.Context, name string, needed []int64) (store.RunPartitionSummary, error)
	RunAgesInPartition(ctx context.Context, name string, afterID int64, limit int) ([]store.RunAge, error)
	RunPartitionDrop(ctx context.Context, name string, maxID int64) error
}

// LeaseName is the maintenance lease the purging replica holds.
const LeaseName = "retention"

const (
	leaseTTL     = 2 * time.Minute
	neededMaxAge = 30 * time.Second // recompute the runs still needed this often within a cycle
	rescanEvery  = time.Hour        // walk again from the oldest run (kept runs may have become old enough)
	maxIDUnbound = int64(1<<63 - 1)
	tableRuns    = "runs"
	tableRunLogs = "run_logs"
)

// Options build a Worker.
type Options struct {
	Config  Config
	Store   Store
	Node    string // the lease holder's name: this replica's node id
	Clock   clockwork.Clock
	Log     *logrus.Entry
	Metrics *Metrics
	// CountedOnly: delete only runs the report roll-up has counted (set
	// when reports are on, so no run leaves before it is in the reports).
	CountedOnly bool
}

// Worker deletes runs and logs past their retention. Start/Stop as every
// background service; Cycle runs one purge cycle (used by tests and by the
// loop).
type Worker struct {
	lifecycle.Loop
	o Options

	runCursor, logCursor int64
	lastRescan           time.Time
}

// New builds a Worker; cfg is taken with its defaults.
func New(o Options) (*Worker, error) {
	o.Config = o.Config.WithDefaults()
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	if o.Store == nil || o.Node == "" {
		return nil, errors.New("retention.New: Store and Node are required")
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Log == nil {
		l := logrus.New()
		l.SetLevel(logrus.PanicLevel)
		o.Log = logrus.NewEntry(l)
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	return &Worker{o: o}, nil
}

// Start runs purge cycles every Interval until Stop.
func (w *Worker) Start(ctx context.Context) {
	w.Loop.Start(ctx, func(ctx context.Context) {
		defer func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = w.o.Store.LeaseRelease(rctx, LeaseName, w.o.Node)
		}()
		for lifecycle.Sleep(ctx, w.o.Clock, w.o.Config.Interval) {
			if _, err := w.Cycle(ctx); err != nil && ctx.Err() == nil {
				w.o.Log.WithError(err).Warn("retention cycle")
			}
		}
	})
}

// Stop ends the loop and waits for it.
func (w *Worker) Stop() { w.Loop.Stop() }

// Result counts what one cycle deleted.
type Result struct {
	Held    bool // false: another replica holds the lease, nothing done
	Runs    int64
	Logs    int64    // log chunks
	Dropped []string // day partitions dropped (retention.partitioned)
	Created []string // day partitions created ahead
}

// Cycle takes the lease and purges until the runs left are all too young
// or still needed. It is not safe to call concurrently with itself.
func (w *Worker) Cycle(ctx context.Context) (Result, error) {
	var res Result
	held, err := w.renew(ctx)
	if err != nil || !held {
		return res, err
	}
	res.Held = true
	pol, err := w.policy(ctx)
	if err != nil {
		return res, err
	}
	now := w.o.Clock.Now()
	if now.Sub(w.lastRescan) >= rescanEvery || now.Before(w.lastRescan) {
		w.runCursor, w.logCursor, w.lastRescan = 0, 0, now
	}
	if w.o.Config.Partitioned {
		if err := w.partitions(ctx, pol, &res); err != nil {
			return res, err
		}
	}
	n, err := w.purgeRuns(ctx, pol)
	res.Runs += n.Runs
	res.Logs += n.Logs
	if err != nil {
		return res, err
	}
	logs, err := w.purgeLogs(ctx, pol)
	res.Logs += logs
	return res, err
}

func (w *Worker) renew(ctx context.Context) (bool, error) {
	now := w.o.Clock.Now()
	return w.o.Store.LeaseTake(ctx, store.LeaseTakeParams{Name: LeaseName, Holder: w.o.Node, NowMs: now.UnixMilli(), ExpiresMs: now.Add(leaseTTL).UnixMilli()})
}

// policy resolves the per-group overrides (by app name) to group ids.
func (w *Worker) policy(ctx context.Context) (policy, error) {
	p := policy{runs: w.o.Config.Runs.D(), logs: w.o.Config.Logs.D(), byGroup: map[int64]GroupConfig{}}
	if len(w.o.Config.Groups) == 0 {
		return p, nil
	}
	gs, err := w.o.Store.GroupList(ctx)
	if err != nil {
		return p, fmt.Errorf("resolve retention overrides: %w", err)
	}
	for _, g := range gs {
		if o, ok := w.o.Config.Groups[g.AppName]; ok {
			p.byGroup[g.ID] = o
		}
	}
	return p, nil
}

// keepers is the set of runs that may not go, refreshed as a cycle goes on.
type keepers struct {
	w       *Worker
	needed  map[int64]bool
	counted int64 // runs with a higher id are not in the reports yet
	at      time.Time
}

func (k *keepers) refresh(ctx context.Context) error {
	if k.needed != nil && k.w.o.Clock.Since(k.at) < neededMaxAge {
		return nil
	}
	needed, err := k.w.o.Store.RunsNeeded(ctx, maxIDUnbound)
	if err != nil {
		return err
	}
	k.needed, k.at, k.counted = needed, k.w.o.Clock.Now(), maxIDUnbound
	if k.w.o.CountedOnly {
		m, err := k.w.o.Store.ReportMarkGet(ctx)
		if err != nil {
			return err
		}
		k.counted = m.RunID
	}
	return nil
}

func (k *keepers) keep(a store.RunAge) bool {
	return !a.State.Final() || a.FollowupPending || k.needed[a.ID] || a.ID > k.counted
}

// finishedAt is when a run ended (its creation when it has no end time).
func finishedAt(a store.RunAge) int64 {
	if a.FinishedMs > 0 {
		return a.FinishedMs
	}
	return a.CreatedMs
}

// purgeRuns walks the runs from the cursor and deletes those past their
// group's retention, one bounded batch at a time with a pause between.
func (w *Worker) purgeRuns(ctx context.Context, pol policy) (store.RunPurgeResult, error) {
	var total store.RunPurgeResult
	k := &keepers{w: w}
	shortest := pol.runs
	for _, g := range pol.byGroup {
		if g.Runs > 0 {
			shortest = min(shortest, g.Runs.D())
		}
	}
	if w.o.Config.Partitioned {
		// Partition drops take the runs kept for the longest retention; the
		// walk is left with the groups that keep theirs for less.
		if shortest >= pol.longest() {
			return total, nil
		}
	}
	for ctx.Err() == nil {
		if err := k.refresh(ctx); err != nil {
			return total, err
		}
		now := w.o.Clock.Now()
		batch, err := w.o.Store.RunAgesAfter(ctx, w.runCursor, w.o.Config.BatchSize)
		if err != nil {
			return total, err
		}
		young := len(batch) == 0
		var del []int64
		var behind time.Duration
		for _, a := range batch {
			if a.CreatedMs >= now.Add(-shortest).UnixMilli() {
				young = true // ids grow with time: the rest are younger still
				break
			}
			w.runCursor = a.ID
			if k.keep(a) || w.o.Config.Partitioned && pol.runsFor(a.GroupID) >= pol.longest() {
				continue
			}
			cutoff := now.Add(-pol.runsFor(a.GroupID)).UnixMilli()
			if finishedAt(a) < cutoff {
				if len(del) == 0 {
					behind = time.Duration(cutoff-finishedAt(a)) * time.Millisecond
				}
				del = append(del, a.ID)
			}
		}
		t := time.Now()
		if len(del) > 0 {
			n, err := w.o.Store.RunPurge(ctx, del)
			total.Runs += n.Runs
			total.Logs += n.Logs
			w.o.Metrics.Purged.WithLabelValues(tableRuns).Add(float64(n.Runs))
			w.o.Metrics.Purged.WithLabelValues(tableRunLogs).Add(float64(n.Logs))
			w.o.Metrics.BacklogAge.WithLabelValues(tableRuns).Set(behind.Seconds())
			if err != nil {
				return total, err
			}
		}
		if young {
			w.o.Metrics.BacklogAge.WithLabelValues(tableRuns).Set(0)
			return total, nil
		}
		if held, err := w.renew(ctx); err != nil || !held {
			return total, err
		}
		if len(del) > 0 && !pause(ctx, max(w.o.Config.Pause, time.Since(t))) {
			return total, ctx.Err()
		}
	}
	return total, ctx.Err()
}

// purgeLogs deletes the logs of runs past the (shorter) log retention, and
// logs whose run is gone.
func (w *Worker) purgeLogs(ctx context.Context, pol policy) (int64, error) {
	var total int64
	k := &keepers{w: w}
	shortest := min(pol.logs, pol.runs)
	for id := range pol.byGroup {
		shortest = min(shortest, pol.logsFor(id))
	}
	for ctx.Err() == nil {
		if err := k.refresh(ctx); err != nil {
			return total, err
		}
		now := w.o.Clock.Now()
		ids, err := w.o.Store.RunLogRunsAfter(ctx, w.logCursor, w.o.Config.BatchSize)
		if err != nil || len(ids) == 0 {
			w.o.Metrics.BacklogAge.WithLabelValues(tableRunLogs).Set(0)
			return total, err
		}
		ages, err := w.o.Store.RunAgesByID(ctx, ids)
		if err != nil {
			return total, err
		}
		byID := make(map[int64]store.RunAge, len(ages))
		for _, a := range ages {
			byID[a.ID] = a
		}
		young := false
		var del []int64
		var behind time.Duration
		for _, id := range ids {
			a, ok := byID[id]
			if ok && a.CreatedMs >= now.Add(-shortest).UnixMilli() {
				young = true
				break
			}
			w.logCursor = id
			if !ok { // the run is gone: its log is an orphan
				del = append(del, id)
				continue
			}
			if !a.State.Final() || k.needed[a.ID] {
				continue
			}
			cutoff := now.Add(-pol.logsFor(a.GroupID)).UnixMilli()
			if finishedAt(a) < cutoff {
				if len(del) == 0 {
					behind = time.Duration(cutoff-finishedAt(a)) * time.Millisecond
				}
				del = append(del, id)
			}
		}
		t := time.Now()
		if len(del) > 0 {
			n, err := w.o.Store.RunLogPurge(ctx, del)
			total += n
			w.o.Metrics.Purged.WithLabelValues(tableRunLogs).Add(float64(n))
			w.o.Metrics.BacklogAge.WithLabelValues(tableRunLogs).Set(behind.Seconds())
			if err != nil {
				return total, err
			}
		}
		if young {
			w.o.Metrics.BacklogAge.WithLabelValues(tableRunLogs).Set(0)
			return total, nil
		}
		if held, err := w.renew(ctx); err != nil || !held {
			return total, err
		}
		if len(del) > 0 && !pause(ctx, max(w.o.Config.Pause, time.Since(t))) {
			return total, ctx.Err()
		}
	}
	return total, ctx.Err()
}

// pause throttles the purge between batches. It is a rate limit on real
// database work, not a decision in time, so it waits on the wall clock (a
// test's fake clock would otherwise stall every batch).
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
