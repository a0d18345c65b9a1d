package retention

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/lifecycle"
	"github.com/ringjob/ringjob/internal/logs"
	"github.com/ringjob/ringjob/store"
)

// Store is what the worker needs of the storage seam.
type Store interface {
	LeaseTake(ctx context.Context, p store.LeaseTakeParams) (bool, error)
	LeaseRelease(ctx context.Context, name, holder string) error
	GroupList(ctx context.Context) ([]store.Group, error)
	RunsNeeded(ctx context.Context, upToID int64) (map[int64]bool, error)
	RunIDCreatedBefore(ctx context.Context, createdBeforeMs int64) (int64, error)
	RunNextID(ctx context.Context, id int64) (next, createdMs int64, ok bool, err error)
	RunLogNextRunID(ctx context.Context, id int64) (int64, bool, error)
	RunPurgeRange(ctx context.Context, p store.RunPurgeRangeParams) (store.RunPurgeResult, error)
	RunLogPurgeRange(ctx context.Context, p store.RunPurgeRangeParams) (int64, error)
	RunPurge(ctx context.Context, ids []int64) (store.RunPurgeResult, error)
	ReportMarkGet(ctx context.Context) (store.ReportMark, error)
	RunPartitionsEnsure(ctx context.Context, p store.RunPartitionsEnsureParams) ([]string, error)
	RunPartitions(ctx context.Context) ([]store.RunPartition, bool, error)
	RunPartitionSummarize(ctx context.Context, name string, needed []int64) (store.RunPartitionSummary, error)
	RunAgesInPartition(ctx context.Context, name string, afterID int64, limit int) ([]store.RunAge, error)
	RunPartitionDrop(ctx context.Context, name string, maxID int64) error
	RunLogPartitionDropFirst(ctx context.Context) (string, error)
	DeleteAftermath() float64
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

	// cursors: where each walk (table and retention) got to; every run
	// behind a cursor is either gone or was kept when it passed.
	cursors    map[walkKey]int64
	lastRescan time.Time
	busy       time.Duration // in DELETE statements, since New
	aftermath  float64       // the store's work after a DELETE, per unit of its time
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
	o.Log = logs.OrDiscard(o.Log)
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	return &Worker{o: o, cursors: map[walkKey]int64{}, aftermath: o.Store.DeleteAftermath()}, nil
}

// Start runs purge cycles every Interval until Stop.
func (w *Worker) Start(ctx context.Context) {
	w.Loop.Start(ctx, func(ctx context.Context) {
		defer func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = w.o.Store.LeaseRelease(rctx, LeaseName, w.o.Node)
		}()
		lifecycle.Every(ctx, w.o.Clock, w.o.Config.Interval, w.o.Config.Interval,
			func(ctx context.Context) error { _, err := w.Cycle(ctx); return err },
			func(err error) { w.o.Log.WithError(err).Warn("retention cycle") })
	})
}

// Stop ends the loop and waits for it.
func (w *Worker) Stop() { w.Loop.Stop() }

// Result counts what one cycle deleted.
type Result struct {
	Held    bool // false: another replica holds the lease, nothing done
	Runs    int64
	Logs    int64         // log chunks
	Busy    time.Duration // time spent in the purge's DELETE statements
	Dropped []string      // day partitions dropped (retention.partitioned)
	Created []string      // day partitions created ahead
}

// Cycle takes the lease and purges until the runs left are all too young
// or still needed. It is not safe to call concurrently with itself.
func (w *Worker) Cycle(ctx context.Context) (res Result, err error) {
	busy := w.busy
	defer func() { res.Busy = w.busy - busy }()
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
		clear(w.cursors)
		w.lastRescan = now
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
	sorted  []int64 // needed, in order
	counted int64   // runs with a higher id are not in the reports yet
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
	k.sorted = k.sorted[:0]
	for id := range needed {
		k.sorted = append(k.sorted, id)
	}
	slices.Sort(k.sorted)
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

// walkKey names one walk along the primary key: a table and a retention
// (the groups that share it).
type walkKey struct {
	table string
	age   time.Duration
}

// walk deletes the rows of one retention: the runs (or logs) of Groups
// (nil: all but NotGroups) that ended more than age ago.
type walk struct {
	walkKey
	groups, notGroups []int64
}

// walks splits the groups by retention: one walk for the default and one
// per other retention in force. get is the retention of a group.
func walks(table string, def time.Duration, pol policy, get func(group int64) time.Duration) []walk {
	byAge := map[time.Duration][]int64{}
	var other []int64
	for g := range pol.byGroup {
		if d := get(g); d != def {
			byAge[d] = append(byAge[d], g)
			other = append(other, g)
		}
	}
	slices.Sort(other)
	out := []walk{{walkKey: walkKey{table, def}, notGroups: other}}
	for d, gs := range byAge {
		slices.Sort(gs)
		out = append(out, walk{walkKey: walkKey{table, d}, groups: gs})
	}
	slices.SortFunc(out, func(a, b walk) int { return int(a.age - b.age) })
	return out
}

// purgeRuns deletes the runs past their group's retention, one walk per
// retention in force.
func (w *Worker) purgeRuns(ctx context.Context, pol policy) (store.RunPurgeResult, error) {
	var total store.RunPurgeResult
	k := &keepers{w: w}
	for _, wk := range walks(tableRuns, pol.runs, pol, pol.runsFor) {
		// Partition drops take the runs kept for the longest retention.
		if w.o.Config.Partitioned && wk.age >= pol.longest() {
			continue
		}
		n, err := w.walk(ctx, k, wk)
		total.Runs += n.Runs
		total.Logs += n.Logs
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// purgeLogs deletes the logs of runs past their group's log retention, and
// logs whose run is gone.
func (w *Worker) purgeLogs(ctx context.Context, pol policy) (int64, error) {
	var total int64
	k := &keepers{w: w}
	for _, wk := range walks(tableRunLogs, min(pol.logs, pol.runs), pol, pol.logsFor) {
		n, err := w.walk(ctx, k, wk)
		total += n.Logs
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// walk goes along the run ids from its cursor to the boundary of its
// retention (the last run created before the cutoff: a run ends after it
// is created, so nothing beyond may go yet), one id range of BatchSize per
// DELETE, and pauses after each so the purge takes at most DBShare of the
// database's time.
func (w *Worker) walk(ctx context.Context, k *keepers, wk walk) (store.RunPurgeResult, error) {
	var total store.RunPurgeResult
	if err := k.refresh(ctx); err != nil {
		return total, err
	}
	cutoff := w.o.Clock.Now().Add(-wk.age).UnixMilli()
	bound, err := w.o.Store.RunIDCreatedBefore(ctx, cutoff)
	if err != nil {
		return total, err
	}
	if wk.table == tableRuns {
		// Only runs the reports have counted (logs do not matter to them).
		bound = min(bound, k.counted)
	}
	backlog := w.o.Metrics.BacklogAge.WithLabelValues(wk.table)
	for ctx.Err() == nil {
		if err := k.refresh(ctx); err != nil {
			return total, err
		}
		from, created, ok, err := w.next(ctx, wk.table, w.cursors[wk.walkKey]+1)
		if err != nil {
			return total, err
		}
		if !ok || from > bound {
			backlog.Set(0)
			return total, nil
		}
		to := min(from+int64(w.o.Config.BatchSize)-1, bound)
		backlog.Set(max(0, float64(cutoff-created)/1000))
		p := store.RunPurgeRangeParams{FromID: from, ToID: to, CutoffMs: cutoff, Groups: wk.groups, NotGroups: wk.notGroups, Keep: k.sorted}
		t := time.Now()
		var n store.RunPurgeResult
		if wk.table == tableRuns {
			n, err = w.o.Store.RunPurgeRange(ctx, p)
		} else {
			n.Logs, err = w.o.Store.RunLogPurgeRange(ctx, p)
		}
		took := time.Since(t)
		w.busy += took
		total.Runs += n.Runs
		total.Logs += n.Logs
		w.o.Metrics.Purged.WithLabelValues(tableRuns).Add(float64(n.Runs))
		w.o.Metrics.Purged.WithLabelValues(tableRunLogs).Add(float64(n.Logs))
		if err != nil {
			return total, err
		}
		w.cursors[wk.walkKey] = to
		if held, err := w.renew(ctx); err != nil || !held {
			return total, err
		}
		if !pause(ctx, w.pauseAfter(took)) {
			return total, ctx.Err()
		}
	}
	return total, ctx.Err()
}

// next is the first id >= id that has a row in the walk's table, and when
// its run was created (0 when the run is gone): the walk skips the gaps
// left by earlier purges in one lookup.
func (w *Worker) next(ctx context.Context, table string, id int64) (next, createdMs int64, ok bool, err error) {
	if table == tableRunLogs {
		if next, ok, err = w.o.Store.RunLogNextRunID(ctx, id); err != nil || !ok {
			return next, 0, ok, err
		}
		at, created, found, err := w.o.Store.RunNextID(ctx, next)
		if err != nil || !found || at != next {
			return next, 0, true, err
		}
		return next, created, true, nil
	}
	return w.o.Store.RunNextID(ctx, id)
}

// pauseAfter is the wait after a statement that took took: long enough
// that the purge's work in the database, the statement and what the
// database does for it after the commit (InnoDB's purge threads), is at
// most DBShare of the time, and at least Pause. A DBShare of 1 sets no
// limit but Pause.
// pauseAfterDrop spaces partition drops out: at least DropGap from one
// drop's start to the next, and, like the row purge, the drops' work (the
// scratch table, the swap, deleting the file) kept to DBShare of the time.
func (w *Worker) pauseAfterDrop(took time.Duration) time.Duration {
	gap := w.o.Config.DropGap - took
	share := w.o.Config.DBShare
	if share >= 1 {
		return max(w.o.Config.Pause, gap)
	}
	return max(w.o.Config.Pause, gap, time.Duration(float64(took)/share)-took)
}

func (w *Worker) pauseAfter(took time.Duration) time.Duration {
	share := w.o.Config.DBShare
	if share >= 1 {
		return w.o.Config.Pause
	}
	work := float64(took) * (1 + w.aftermath)
	return max(w.o.Config.Pause, time.Duration(work/share)-took)
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
