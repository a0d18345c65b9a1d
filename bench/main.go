// Command bench measures the scheduler core against a real MySQL/MariaDB
// (or PostgreSQL, with -postgres postgres://USER@HOST:PORT/):
// sustained triggers per second, dispatch lag, exactly-once, and what it
// costs in CPU and memory.
//
//	go run ./bench -jobs 1000 -duration 30s
//
// It creates its own database (dropped at the end unless -keep), migrates
// it, creates N enabled every-second cron jobs (`* * * * * ?`) on a no-op
// target, runs one scheduler.Scheduler in-process with the real clock for
// -duration, stops it gracefully, and reports over a measured interval that
// leaves out a warm-up at the start and the last second before the stop:
//
//   - fires expected: N x whole seconds of the interval;
//   - dispatched, from the no-op driver's own counts and from the runs table;
//   - duplicates (a (job, time) dispatched twice, whole run: must be 0) and
//     missing fires;
//   - lag: claim time (runs.dispatched_ms) and driver observation time,
//     each minus the scheduled time, p50/p99/max;
//   - sustained triggers per second;
//   - this process's CPU (getrusage), peak RSS (VmHWM), the database
//     server's CPU (/proc/<pid>/stat, when it runs on this machine) and the
//     server's statement and row counters.
//
// It prints a table, then one line of JSON. -cpuprofile writes a pprof CPU
// profile of the measured interval; -slowlog logs and summarises every
// statement of the benchmark database through MariaDB's slow query log.
// docs/benchmarks.md has the figures and how to read them.
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/schedule"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
)

type options struct {
	jobs         int
	duration     time.Duration
	warmup       time.Duration
	dsn          string
	postgres     string
	noAnalyze    bool
	partitions   int
	poolWorkers  int
	poolQueue    int
	prereadLimit int
	keep         bool
	cpuProfile   string
	slowLog      bool
	out          string
	label        string
	verbose      bool
	createConc   int
	perSecond    bool
}

func main() {
	var o options
	defDSN := os.Getenv("RINGJOB_MYSQL_DSN")
	if defDSN == "" {
		defDSN = "root@tcp(127.0.0.1:3306)/"
	}
	flag.IntVar(&o.jobs, "jobs", 1000, "number of every-second cron jobs")
	flag.DurationVar(&o.duration, "duration", 30*time.Second, "how long the scheduler runs (warm-up included)")
	flag.DurationVar(&o.warmup, "warmup", 5*time.Second, "fires in the first part of the run that are not measured")
	flag.StringVar(&o.dsn, "dsn", defDSN, "go-sql-driver/mysql DSN of a server where the user may CREATE and DROP databases (default $RINGJOB_MYSQL_DSN)")
	flag.StringVar(&o.postgres, "postgres", "", "measure on PostgreSQL instead: postgres://USER@HOST:PORT/ of a server where the user may CREATE and DROP databases")
	flag.BoolVar(&o.noAnalyze, "no-analyze", false, "with -postgres: do not ANALYZE runs and jobs during the warm-up (measure a database without statistics)")
	flag.IntVar(&o.partitions, "partitions", 1, "scheduler lock partitions")
	flag.IntVar(&o.poolWorkers, "pool-workers", 0, "fast trigger pool workers (0 = scheduler default)")
	flag.IntVar(&o.poolQueue, "pool-queue", 0, "fast trigger pool queue places (0 = scheduler default)")
	flag.IntVar(&o.prereadLimit, "preread-limit", 0, "jobs per locked pre-read transaction (0 = scheduler default)")
	flag.BoolVar(&o.keep, "keep", false, "keep the benchmark database instead of dropping it")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a pprof CPU profile of the measured interval to this file")
	flag.BoolVar(&o.slowLog, "slowlog", false, "log every statement through MariaDB's slow query log and summarise them (switches the log on globally for the run)")
	flag.StringVar(&o.out, "out", "", "also append the JSON result line to this file")
	flag.StringVar(&o.label, "label", "", "free-form label copied into the JSON result")
	flag.BoolVar(&o.verbose, "v", false, "log the scheduler at info level")
	flag.IntVar(&o.createConc, "create-concurrency", 16, "concurrent job creations during setup")
	flag.BoolVar(&o.perSecond, "per-second", false, "also print the driver lag of each fire second")
	flag.Parse()
	if o.jobs < 1 || o.duration < o.warmup+5*time.Second {
		fmt.Fprintln(os.Stderr, "bench: -jobs must be positive and -duration at least -warmup + 5s")
		os.Exit(2)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	res, err := run(ctx, o)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if res.Duplicates > 0 {
		os.Exit(3)
	}
}

// result is the JSON line.
type result struct {
	Label         string             `json:"label,omitempty"`
	Jobs          int                `json:"jobs"`
	Partitions    int                `json:"partitions"`
	PoolWorkers   int                `json:"pool_workers"`
	PoolQueue     int                `json:"pool_queue"`
	DurationS     float64            `json:"duration_s"`
	IntervalFrom  string             `json:"interval_from"`
	IntervalS     int64              `json:"interval_s"`
	Expected      int64              `json:"fires_expected"`
	DispatchedDrv int64              `json:"dispatched_driver"`
	DispatchedDB  int64              `json:"dispatched_runs_table"`
	Duplicates    int64              `json:"duplicates"`
	DuplicatesDB  int64              `json:"duplicates_runs_table"`
	Missing       int64              `json:"missing"`
	TriggersPerS  float64            `json:"triggers_per_s"`
	LagClaim      pct                `json:"lag_claim_ms"`
	LagDriver     pct                `json:"lag_driver_ms"`
	Late          int64              `json:"late_runs"`
	Backpressure  float64            `json:"backpressure_deferrals"`
	CPUSelfCores  float64            `json:"cpu_self_cores"`
	CPUDBCores    float64            `json:"cpu_db_cores"`
	CPUHostCores  float64            `json:"cpu_host_busy_cores"`
	CPUOtherCores float64            `json:"cpu_other_cores"`
	PeakRSSMiB    float64            `json:"peak_rss_mib"`
	StopMs        int64              `json:"stop_ms"`
	RunStates     map[string]int     `json:"run_states"`
	DBPerSec      map[string]float64 `json:"db_per_s,omitempty"`
	Statements    []stmtStat         `json:"statements,omitempty"`
	Machine       machine            `json:"machine"`
	StartedAt     string             `json:"started_at"`
}

type pct struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func percentiles(v []float64) pct {
	if len(v) == 0 {
		return pct{}
	}
	sort.Float64s(v)
	at := func(q float64) float64 {
		i := int(q*float64(len(v))+0.999999) - 1 // nearest rank
		return v[min(max(i, 0), len(v)-1)]
	}
	return pct{N: len(v), P50: at(0.50), P99: at(0.99), Max: v[len(v)-1]}
}

func run(ctx context.Context, o options) (*result, error) {
	if o.postgres != "" {
		if o.slowLog {
			return nil, fmt.Errorf("-slowlog reads MariaDB's slow query log: not with -postgres")
		}
		b, st, db, drop, err := openPostgresBench(ctx, o.postgres, o.jobs)
		if err != nil {
			return nil, err
		}
		defer func() {
			if o.keep {
				fmt.Fprintf(os.Stderr, "bench: kept database %s\n", db)
				b.admin.Close()
				return
			}
			drop()
		}()
		defer st.Close()
		if !o.noAnalyze {
			b.analyze = "ANALYZE runs, jobs"
		}
		return measure(ctx, o, b, st, db, describePostgres(ctx, b.admin), nil)
	}
	cfg, err := mysql.ParseDSN(o.dsn)
	if err != nil {
		return nil, fmt.Errorf("parse -dsn: %w", err)
	}
	adminCfg := cfg.Clone()
	adminCfg.DBName = ""
	adminCfg.InterpolateParams = true
	admin, err := sql.Open("mysql", adminCfg.FormatDSN())
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	if err := admin.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("connect to %s: %w", cfg.Addr, err)
	}
	mach := describeMachine(ctx, admin)

	db := fmt.Sprintf("ringjob_bench_%d_%s", o.jobs, randHex(4))
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+db+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
		return nil, fmt.Errorf("create database %s: %w", db, err)
	}
	defer func() {
		if o.keep {
			fmt.Fprintf(os.Stderr, "bench: kept database %s\n", db)
			return
		}
		dctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(dctx, "DROP DATABASE IF EXISTS `"+db+"`"); err != nil {
			fmt.Fprintf(os.Stderr, "bench: drop database %s: %v\n", db, err)
		}
	}()

	var slow *slowLog
	stCfg := cfg.Clone()
	stCfg.DBName = db
	if o.slowLog {
		if slow, err = enableSlowLog(ctx, admin); err != nil {
			return nil, err
		}
		defer slow.restore(context.Background())
		if stCfg.Params == nil {
			stCfg.Params = map[string]string{}
		}
		stCfg.Params["long_query_time"] = "0" // this client's connections only
	}
	st, err := store.OpenMySQL(ctx, stCfg.FormatDSN())
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return nil, err
	}
	b := &benchDB{server: "mariadbd", admin: admin, tables: admin, table: func(n string) string { return "`" + db + "`." + n },
		distinctFires: "COUNT(DISTINCT job_id, scheduled_ms, shard_index, attempt)",
		status:        func(ctx context.Context) map[string]int64 { return globalStatus(ctx, admin) }}
	dbPID := findDBPID(ctx, admin)
	b.cpu = func() time.Duration {
		if dbPID > 0 {
			return procCPU(dbPID)
		}
		return -1
	}
	return measure(ctx, o, b, st, db, mach, slow)
}

// measure runs the scheduler on st's database b and reports.
func measure(ctx context.Context, o options, b *benchDB, st *store.Store, db string, mach machine, slow *slowLog) (*result, error) {
	mach.DBServer = b.server

	// Setup: a group with the no-op target and N every-second jobs. Jobs are
	// created enabled with no next fire (not due), then all get the same
	// first fire second in one statement, so setup time does not count.
	t0 := time.Now()
	g, err := st.GroupCreate(ctx, store.GroupCreateParams{AppName: "bench", Title: "bench", Members: []string{"noop://bench"}, NowMs: t0.UnixMilli()})
	if err != nil {
		return nil, err
	}
	if _, err := schedule.Parse(schedule.KindCron, "* * * * * ?", "UTC"); err != nil {
		return nil, fmt.Errorf("the benchmark schedule does not parse: %w", err)
	}
	ids, err := createJobs(ctx, st, g.ID, o.jobs, o.createConc)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "bench: database %s, %d jobs created in %s\n", db, len(ids), time.Since(t0).Round(time.Millisecond))

	// Timeline (whole seconds): first fire S0 about 2 s after the start; the
	// measured fire times are [from, to): from = S0 + warm-up, to = the last
	// whole second at least 1 s before the stop.
	start := time.Now()
	s0 := start.Unix() + 2
	stopAt := start.Add(o.duration)
	from := s0 + int64(o.warmup.Round(time.Second)/time.Second)
	to := stopAt.Add(-time.Second).Unix()
	if to <= from {
		return nil, fmt.Errorf("-duration %s leaves no measured interval after a warm-up of %s", o.duration, o.warmup)
	}
	drv := newNoopDriver(ids, s0-1, stopAt.Unix()+10-(s0-1))
	if _, err := b.tables.ExecContext(ctx, "UPDATE "+b.table("jobs")+" SET next_fire_ms = ? WHERE group_id = ?", s0*1000, g.ID); err != nil {
		return nil, fmt.Errorf("set the first fire time: %w", err)
	}

	reg := targets.NewRegistry()
	reg.Register("noop", drv)
	promReg := prometheus.NewRegistry()
	metrics := scheduler.NewMetrics(promReg)
	log := logrus.New()
	log.SetOutput(os.Stderr)
	log.SetLevel(logrus.WarnLevel)
	if o.verbose {
		log.SetLevel(logrus.InfoLevel)
	}
	scfg := scheduler.Config{NodeID: fmt.Sprintf("bench-%d", os.Getpid()), LockPartitions: o.partitions, PreReadLimit: o.prereadLimit}
	scfg.FastPool.Workers, scfg.FastPool.Queue = o.poolWorkers, o.poolQueue
	sch, err := scheduler.New(scheduler.Options{Config: scfg, Store: st, Drivers: reg, Log: logrus.NewEntry(log), Metrics: metrics})
	if err != nil {
		return nil, err
	}
	eff := scfg.WithDefaults()
	if err := sch.Start(ctx); err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			sch.Stop(context.Background())
		}
	}()

	// Progress once every 5 s on stderr.
	progDone := make(chan struct{})
	var progWG sync.WaitGroup
	progWG.Add(1)
	go func() {
		defer progWG.Done()
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		last := int64(0)
		for {
			select {
			case <-progDone:
				return
			case <-t.C:
				n := drv.calls.Load()
				fmt.Fprintf(os.Stderr, "bench: %5.1fs dispatched %d (+%d)\n", time.Since(start).Seconds(), n, n-last)
				last = n
			}
		}
	}()

	fromT, toT := time.Unix(from, 0), time.Unix(to, 0)
	if b.analyze != "" {
		// The runs table was empty moments ago and PostgreSQL has no
		// statistics of it yet: planned without them, the hot statements
		// on runs by id read a replica's whole ring through
		// runs_owner_state_time. Autovacuum analyzes a table within about
		// a minute of its growth, longer than the warm-up; the harness
		// does it once, halfway through the warm-up.
		if !sleepUntil(ctx, fromT.Add(-o.warmup/2)) {
			return nil, ctx.Err()
		}
		if _, err := b.tables.ExecContext(ctx, b.analyze); err != nil {
			return nil, fmt.Errorf("analyze: %w", err)
		}
	}
	if !sleepUntil(ctx, fromT) {
		return nil, ctx.Err()
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
	}
	if slow != nil {
		slow.markStart()
	}
	sA := takeSample(ctx, b)
	ok := sleepUntil(ctx, toT)
	sB := takeSample(ctx, b)
	if slow != nil {
		slow.markEnd()
	}
	if o.cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if !ok {
		return nil, ctx.Err()
	}
	sleepUntil(ctx, stopAt)
	stopStart := time.Now()
	sch.Stop(context.Background())
	stopped = true
	stopMs := time.Since(stopStart).Milliseconds()
	close(progDone)
	progWG.Wait()

	// Results.
	ds := drv.stats(from, to)
	interval := to - from
	r := &result{
		Label: o.label, Jobs: o.jobs, Partitions: eff.LockPartitions, PoolWorkers: eff.FastPool.Workers, PoolQueue: eff.FastPool.Queue,
		DurationS: o.duration.Seconds(), IntervalFrom: fromT.UTC().Format(time.RFC3339), IntervalS: interval,
		Expected: int64(o.jobs) * interval, DispatchedDrv: ds.Dispatched, Duplicates: ds.Duplicates, Missing: ds.Missing,
		TriggersPerS: float64(ds.InWindow) / float64(interval), LagDriver: percentiles(ds.LagMs),
		StopMs: stopMs, Machine: mach, StartedAt: start.UTC().Format(time.RFC3339),
	}
	wall := sB.wall.Sub(sA.wall).Seconds()
	r.CPUSelfCores = (sB.selfCPU - sA.selfCPU).Seconds() / wall
	if sA.dbCPU >= 0 && sB.dbCPU >= 0 {
		r.CPUDBCores = (sB.dbCPU - sA.dbCPU).Seconds() / wall
	} else {
		r.CPUDBCores = -1
	}
	r.CPUHostCores = (sB.hostBusy - sA.hostBusy) / wall
	r.CPUOtherCores = max(0, r.CPUHostCores-r.CPUSelfCores-max(r.CPUDBCores, 0))
	r.PeakRSSMiB = float64(peakRSS()) / (1 << 20)
	r.Backpressure = counterValue(metrics.Backpressure)
	r.DBPerSec = map[string]float64{}
	for _, k := range append(statusVars, pgStatVars...) {
		a, okA := sA.status[k]
		b, okB := sB.status[k]
		if okA && okB && k != "Threads_running" {
			r.DBPerSec[k] = float64(b-a) / wall
		}
	}
	if err := runsTableStats(context.Background(), b, from, to, r); err != nil {
		return nil, err
	}
	if slow != nil {
		stmts, err := slow.analyse(db)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
		r.Statements = stmts
	}
	printTable(os.Stdout, r, ds, o.perSecond)
	line, _ := json.Marshal(r)
	fmt.Println(string(line))
	if o.out != "" {
		f, err := os.OpenFile(o.out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return r, err
		}
		defer f.Close()
		if _, err := f.Write(append(line, '\n')); err != nil {
			return r, err
		}
	}
	return r, nil
}

// createJobs creates n enabled every-second cron jobs with no next fire yet.
func createJobs(ctx context.Context, st *store.Store, groupID int64, n, conc int) ([]int64, error) {
	ids := make([]int64, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	next := make(chan int)
	now := time.Now().UnixMilli()
	for w := 0; w < max(conc, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				j, err := st.JobCreate(ctx, store.JobCreateParams{JobFields: store.JobFields{
					GroupID: groupID, Name: fmt.Sprintf("bench-%05d", i), ScheduleType: string(schedule.KindCron), ScheduleConf: "* * * * * ?",
					TimeZone: "UTC", MisfirePolicy: kind.MisfireDoNothing, Params: "", RouteStrategy: "first", BlockStrategy: "SERIAL_EXECUTION", ShardCount: 1,
				}, Enabled: true, NextFireMs: 0, NowMs: now})
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				ids[i] = j.ID
			}
		}()
	}
	for i := 0; i < n; i++ {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	return ids, firstErr
}

// runsTableStats reads the ledger: dispatched fires and claim lag for
// scheduled times in [from, to), duplicates, and the count of runs by state.
func runsTableStats(ctx context.Context, b *benchDB, from, to int64, r *result) error {
	rows, err := b.tables.QueryContext(ctx, "SELECT scheduled_ms, dispatched_ms, late FROM "+b.table("runs")+" WHERE sched_fire = 1 AND scheduled_ms >= ? AND scheduled_ms < ?", from*1000, to*1000)
	if err != nil {
		return fmt.Errorf("read runs: %w", err)
	}
	var lags []float64
	for rows.Next() {
		var sch, disp, late int64
		if err := rows.Scan(&sch, &disp, &late); err != nil {
			rows.Close()
			return err
		}
		if disp > 0 {
			lags = append(lags, float64(disp-sch))
		}
		r.Late += late
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	r.DispatchedDB = int64(len(lags))
	r.LagClaim = percentiles(lags)
	if err := b.tables.QueryRowContext(ctx, "SELECT COUNT(*) - "+b.distinctFires+" FROM "+b.table("runs")+" WHERE sched_fire = 1").Scan(&r.DuplicatesDB); err != nil {
		return fmt.Errorf("count duplicate runs: %w", err)
	}
	r.RunStates = map[string]int{}
	srows, err := b.tables.QueryContext(ctx, "SELECT state, COUNT(*) FROM "+b.table("runs")+" GROUP BY state")
	if err != nil {
		return err
	}
	defer srows.Close()
	for srows.Next() {
		var s string
		var n int
		if err := srows.Scan(&s, &n); err != nil {
			return err
		}
		r.RunStates[s] = n
	}
	return srows.Err()
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil || m.Counter == nil {
		return 0
	}
	return m.Counter.GetValue()
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
