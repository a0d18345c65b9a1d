package reports

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/lifecycle"
	"github.com/ringjob/ringjob/internal/logs"
	"github.com/ringjob/ringjob/maintenance/retention"
	"github.com/ringjob/ringjob/store"
)

// Config is the reports section of the server config.
type Config struct {
	// Disabled stops the roll-up (the stats endpoint then shows nothing new,
	// and retention no longer waits for runs to be counted).
	Disabled bool `yaml:"disabled"`
	// Keep is how long hour buckets are kept (default 400d).
	Keep retention.Age `yaml:"keep"`
	// MinuteKeep is how long minute buckets are kept (default 2d).
	MinuteKeep retention.Age `yaml:"minute_keep"`
	// Interval between roll-ups (default 10s): the dashboard lags by about
	// this plus Settle.
	Interval time.Duration `yaml:"interval"`
	// Settle: a run younger than this that is not final yet holds the
	// watermark back; an older one is noted as pending (default 30s).
	Settle time.Duration `yaml:"settle"`
}

// WithDefaults fills the zero fields.
func (c Config) WithDefaults() Config {
	if c.Keep == 0 {
		c.Keep = retention.Age(400 * 24 * time.Hour)
	}
	if c.MinuteKeep == 0 {
		c.MinuteKeep = retention.Age(48 * time.Hour)
	}
	if c.Interval == 0 {
		c.Interval = 10 * time.Second
	}
	if c.Settle == 0 {
		c.Settle = 30 * time.Second
	}
	return c
}

// Validate names every field that is wrong.
func (c Config) Validate() error {
	var errs []error
	if c.Keep.D() < 24*time.Hour {
		errs = append(errs, fmt.Errorf("reports.keep must be at least 1d, got %s", c.Keep.D()))
	}
	if c.MinuteKeep.D() < time.Hour || c.MinuteKeep > c.Keep {
		errs = append(errs, fmt.Errorf("reports.minute_keep must be at least 1h and at most reports.keep, got %s", c.MinuteKeep.D()))
	}
	if c.Interval < time.Second {
		errs = append(errs, fmt.Errorf("reports.interval must be at least 1s, got %s", c.Interval))
	}
	if c.Settle < time.Second {
		errs = append(errs, fmt.Errorf("reports.settle must be at least 1s, got %s", c.Settle))
	}
	return errors.Join(errs...)
}

// Store is what the roll-up needs of the storage seam.
type Store interface {
	LeaseTake(ctx context.Context, p store.LeaseTakeParams) (bool, error)
	LeaseRelease(ctx context.Context, name, holder string) error
	ReportMarkGet(ctx context.Context) (store.ReportMark, error)
	RunOutcomesAfter(ctx context.Context, afterID int64, limit int) ([]store.RunOutcome, error)
	RunOutcomesByID(ctx context.Context, ids []int64) ([]store.RunOutcome, error)
	ReportPendingList(ctx context.Context, limit int) ([]int64, error)
	ReportApply(ctx context.Context, p store.ReportApplyParams) error
	ReportPurgeOldest(ctx context.Context, resolution string, beforeMs int64) (int64, bool, error)
}

// LeaseName is the maintenance lease the rolling-up replica holds.
const LeaseName = "reports"

const (
	leaseTTL     = 2 * time.Minute
	stepRuns     = 5000 // runs read per statement
	stepPending  = 1000
	maxStepsTick = 50 // reads of stepRuns per tick, then yield to the next tick
)

// Metrics are the roll-up's collectors.
type Metrics struct {
	Counted prometheus.Counter
	Lag     prometheus.Gauge
	Purged  prometheus.Counter
}

// NewMetrics creates the collectors and registers them on reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Counted: prometheus.NewCounter(prometheus.CounterOpts{Name: "ringjob_reports_runs_counted_total", Help: "Final runs added to run_reports."}),
		Lag: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ringjob_reports_lag_seconds",
			Help: "Age of the newest run counted by the roll-up (how far the reports are behind)."}),
		Purged: prometheus.NewCounter(prometheus.CounterOpts{Name: "ringjob_reports_purged_rows_total", Help: "run_reports rows deleted past reports.keep / minute_keep."}),
	}
	if reg != nil {
		reg.MustRegister(m.Counted, m.Lag, m.Purged)
	}
	return m
}

// Options build a Rollup.
type Options struct {
	Config  Config
	Store   Store
	Node    string
	Clock   clockwork.Clock
	Log     *logrus.Entry
	Metrics *Metrics
}

// Rollup maintains run_reports.
type Rollup struct {
	lifecycle.Loop
	o Options
}

// New builds a Rollup; cfg is taken with its defaults.
func New(o Options) (*Rollup, error) {
	o.Config = o.Config.WithDefaults()
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	if o.Store == nil || o.Node == "" {
		return nil, errors.New("reports.New: Store and Node are required")
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	o.Log = logs.OrDiscard(o.Log)
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	return &Rollup{o: o}, nil
}

// Start rolls up every Interval until Stop.
func (r *Rollup) Start(ctx context.Context) {
	r.Loop.Start(ctx, func(ctx context.Context) {
		defer func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = r.o.Store.LeaseRelease(rctx, LeaseName, r.o.Node)
		}()
		lifecycle.Every(ctx, r.o.Clock, r.o.Config.Interval, r.o.Config.Interval,
			func(ctx context.Context) error { _, err := r.Tick(ctx); return err },
			func(err error) { r.o.Log.WithError(err).Warn("report roll-up") })
	})
}

// Stop ends the loop and waits for it.
func (r *Rollup) Stop() { r.Loop.Stop() }

// Tick takes the lease, rolls up what is ready (a bounded number of reads)
// and deletes buckets past their keep. It returns the runs counted.
func (r *Rollup) Tick(ctx context.Context) (int, error) {
	now := r.o.Clock.Now()
	held, err := r.o.Store.LeaseTake(ctx, store.LeaseTakeParams{Name: LeaseName, Holder: r.o.Node, NowMs: now.UnixMilli(), ExpiresMs: now.Add(leaseTTL).UnixMilli()})
	if err != nil || !held {
		return 0, err
	}
	total := 0
	for reads := 0; reads < maxStepsTick; {
		n, used, more, err := r.pass(ctx, maxStepsTick-reads)
		total += n
		reads += max(used, 1)
		if errors.Is(err, store.ErrReportMarkMoved) {
			break // another replica rolled up meanwhile (its lease expired ours)
		}
		if err != nil {
			return total, err
		}
		if !more {
			break
		}
	}
	for _, p := range []struct {
		res  string
		keep time.Duration
	}{{store.ReportMinute, r.o.Config.MinuteKeep.D()}, {store.ReportHour, r.o.Config.Keep.D()}} {
		for ctx.Err() == nil {
			n, more, err := r.o.Store.ReportPurgeOldest(ctx, p.res, now.Add(-p.keep).UnixMilli())
			r.o.Metrics.Purged.Add(float64(n))
			if err != nil {
				return total, err
			}
			if !more {
				break
			}
		}
	}
	return total, ctx.Err()
}

type bucketKey struct {
	res        string
	group, job int64
	bucket     int64
}

type tally map[bucketKey]*store.ReportRow

func (t tally) add(o store.RunOutcome) {
	for _, res := range []struct {
		name string
		size int64
	}{{store.ReportMinute, 60_000}, {store.ReportHour, 3_600_000}} {
		b := o.ScheduledMs - o.ScheduledMs%res.size
		for _, lvl := range [][2]int64{{o.GroupID, o.JobID}, {o.GroupID, 0}, {0, 0}} {
			k := bucketKey{res.name, lvl[0], lvl[1], b}
			row := t[k]
			if row == nil {
				row = &store.ReportRow{Resolution: res.name, GroupID: lvl[0], JobID: lvl[1], BucketMs: b}
				t[k] = row
			}
			row.Add(o.State, o.DurationMs())
		}
	}
}

// Step counts one batch of runs past the watermark plus the pending runs
// that ended, and reports whether more are ready.
func (r *Rollup) Step(ctx context.Context) (counted int, more bool, err error) {
	counted, _, more, err = r.pass(ctx, 1)
	return counted, more, err
}

// maxPassBuckets bounds the buckets one pass adds in its transaction; a
// pass that reaches it is applied and the next one goes on from there.
const maxPassBuckets = 50_000

// pass counts up to reads batches of runs past the watermark, plus the
// pending runs that ended, and applies them in one step (one transaction,
// one move of the mark). Counting a whole tick's runs together writes each
// bucket once per tick instead of once per batch: with every job firing
// every second, a batch of 5,000 runs holds one run of each of 5,000 jobs,
// so per-batch steps cost two bucket upserts (job minute and hour) per run,
// and a 10 s tick of runs a fifth of one. It returns the runs counted, the
// batches read, and whether more are ready.
func (r *Rollup) pass(ctx context.Context, reads int) (counted, used int, more bool, err error) {
	from, err := r.o.Store.ReportMarkGet(ctx)
	if err != nil {
		return 0, 0, false, err
	}
	now := r.o.Clock.Now()
	settled := now.Add(-r.o.Config.Settle).UnixMilli()
	t := tally{}
	to := ReportMarkNext(from, now)
	var addPending, donePending []int64
	var newest int64
	pending, err := r.o.Store.ReportPendingList(ctx, stepPending)
	if err != nil {
		return 0, 0, false, err
	}
	if len(pending) > 0 {
		outs, err := r.o.Store.RunOutcomesByID(ctx, pending)
		if err != nil {
			return 0, 0, false, err
		}
		seen := map[int64]bool{}
		for _, o := range outs {
			seen[o.ID] = true
			if o.State.Final() {
				t.add(o)
				counted++
				donePending = append(donePending, o.ID)
			}
		}
		for _, id := range pending {
			if !seen[id] {
				donePending = append(donePending, id) // deleted with its job: nothing to count
			}
		}
	}
	for used < reads && len(t) < maxPassBuckets {
		runs, err := r.o.Store.RunOutcomesAfter(ctx, to.RunID, stepRuns)
		if err != nil {
			return 0, used, false, err
		}
		used++
		held := false
		for _, o := range runs {
			if !o.State.Final() {
				if o.CreatedMs > settled {
					held = true // young and still going: wait for it here
					break
				}
				addPending = append(addPending, o.ID)
			} else {
				t.add(o)
				counted++
				newest = max(newest, o.ScheduledMs)
			}
			to.RunID = o.ID
		}
		more = !held && len(runs) == stepRuns
		if !more {
			break
		}
	}
	if to.RunID == from.RunID && len(donePending) == 0 {
		return 0, used, false, nil
	}
	rows := make([]store.ReportRow, 0, len(t))
	for _, row := range t {
		rows = append(rows, *row)
	}
	if err := r.o.Store.ReportApply(ctx, store.ReportApplyParams{From: from, To: to, Rows: rows, AddPending: addPending, DonePending: donePending}); err != nil {
		return 0, used, false, err
	}
	r.o.Metrics.Counted.Add(float64(counted))
	if newest > 0 {
		r.o.Metrics.Lag.Set(max(0, float64(now.UnixMilli()-newest)/1000))
	}
	return counted, used, more, nil
}

// ReportMarkNext is the mark after from, as of now, with the same run id.
func ReportMarkNext(from store.ReportMark, now time.Time) store.ReportMark {
	return store.ReportMark{RunID: from.RunID, Seq: from.Seq + 1, AtMs: now.UnixMilli()}
}
