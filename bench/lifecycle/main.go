// Command lifecycle benchmarks data lifecycle and scale against MariaDB
// (make bench-lifecycle; docs/benchmarks.md has the figures):
//
//	-mode jobs: N daily jobs over G groups plus K every-second jobs. One
//	scheduler in-process with the real clock dispatches to a counting
//	target; reported: missing and doubled every-second fires and their lag
//	(at the target), peak RSS, scheduler start-up, the REST API's list
//	pages with that many jobs, and (-server-bin) the start-up of a real
//	`ringjob server` on that database.
//
//	-mode bigtable: a runs table of R finished rows spread over D days
//	(generated server-side with batched INSERT ... SELECT from MariaDB's
//	SEQUENCE engine) plus K every-second jobs. Phase A measures the lag;
//	phase B runs the retention worker (runs older than -retain-days go) at
//	the same time and measures its purge rate and the lag; then the stats
//	endpoint's latency for an hour, a day and a week.
//
// -postgres runs either mode on PostgreSQL (postgres.go): the runs are
// generated from generate_series, one INSERT ... SELECT per day partition,
// and partitions are made and dropped by the store's own code. -rounds
// alternates phases A and B (A, B, A, B, ...) so that a baseline and a
// purge window are measured under the same background load.
//
// It prints one JSON line per run and appends it to -out.
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/api"
	"github.com/ringjob/ringjob/auth/identity"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/maintenance/reports"
	"github.com/ringjob/ringjob/maintenance/retention"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
)

type options struct {
	mode       string
	dsn        string
	pool       string
	daily      int
	every      int
	groups     int
	rows       int
	days       int
	retainDays int
	duration   time.Duration
	warmup     time.Duration
	batch      int
	pause      time.Duration
	share      float64
	out        string
	label      string
	serverBin  string
	keep       bool
	partition  bool
	timeline   bool
	datadir    string
	dbName     string
	generate   bool
	reuse      bool
	dbPID      int // the private mariadbd's, for its CPU time (0: unknown)
	postgres   string
	rounds     int
}

func main() {
	var o options
	def := os.Getenv("RINGJOB_MYSQL_DSN")
	if def == "" {
		def = "root@tcp(127.0.0.1:3306)/"
	}
	flag.StringVar(&o.mode, "mode", "jobs", "jobs or bigtable")
	flag.StringVar(&o.dsn, "dsn", def, "MariaDB server DSN (a database is created and dropped)")
	flag.StringVar(&o.pool, "throwaway-pool", "", "start a private mariadbd with this buffer pool (e.g. 2G) instead of using -dsn")
	flag.IntVar(&o.daily, "daily", 1_000_000, "jobs mode: daily jobs (fire times spread over the day)")
	flag.IntVar(&o.every, "every", 1000, "every-second jobs")
	flag.IntVar(&o.groups, "groups", 10_000, "jobs mode: groups the daily jobs are spread over")
	flag.IntVar(&o.rows, "rows", 10_000_000, "bigtable mode: finished runs to generate")
	flag.IntVar(&o.days, "days", 40, "bigtable mode: the generated runs span this many days up to now")
	flag.IntVar(&o.retainDays, "retain-days", 30, "bigtable mode: retention.runs for phase B")
	flag.DurationVar(&o.duration, "duration", 60*time.Second, "measured time (per phase in bigtable mode)")
	flag.DurationVar(&o.warmup, "warmup", 10*time.Second, "time before measuring")
	flag.IntVar(&o.batch, "batch", 0, "retention.batch_size (0 = default)")
	flag.DurationVar(&o.pause, "pause", 0, "retention.pause (0 = default)")
	flag.Float64Var(&o.share, "db-share", 0, "retention.db_share (0 = default)")
	flag.StringVar(&o.out, "out", "", "append the JSON result to this file")
	flag.StringVar(&o.label, "label", "", "label in the result")
	flag.StringVar(&o.serverBin, "server-bin", "", "jobs mode: time the start-up of this ringjob binary on the benchmark database")
	flag.BoolVar(&o.keep, "keep", false, "keep the database")
	flag.StringVar(&o.datadir, "datadir", "", "with -throwaway-pool: keep the private mariadbd's data in this directory (created on first use)")
	flag.StringVar(&o.dbName, "db", "", "bigtable mode: database name (default: a new one per run); with -keep and -datadir, a table generated once is measured later with -reuse")
	flag.BoolVar(&o.generate, "generate-only", false, "bigtable mode: generate the table (kept: implies -keep) and stop")
	flag.BoolVar(&o.reuse, "reuse", false, "bigtable mode: measure the table generated earlier in -db (it is left changed: the purge deletes runs)")
	flag.BoolVar(&o.timeline, "timeline", false, "bigtable mode: print the lag of every second of both phases and the retention worker's log (drop times)")
	flag.IntVar(&o.rounds, "rounds", 1, "bigtable mode: phases A (no purge) and B (purge) alternate this many times, each -duration long; the lags are over all windows of a phase")
	flag.BoolVar(&o.partition, "partitioned", false, "bigtable mode: runs partitioned by day (retention.partitioned), purged by dropping partitions")
	flag.StringVar(&o.postgres, "postgres", "", "measure on PostgreSQL instead, postgres://USER@HOST:PORT/ of a server where the user may create databases (bench/fresh-postgres.sh starts one)")
	flag.Parse()
	if o.postgres != "" && (o.pool != "" || o.dbName != "" || o.generate || o.reuse) {
		fail(fmt.Errorf("-postgres: -throwaway-pool, -db, -generate-only and -reuse are MariaDB's only (bench/fresh-postgres.sh starts a PostgreSQL of its own)"))
	}
	if o.rounds < 1 {
		fail(fmt.Errorf("-rounds must be at least 1, got %d", o.rounds))
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if o.pool != "" {
		tw, err := startThrowaway(o.pool, o.datadir)
		if err != nil {
			fail(err)
		}
		defer tw.stop()
		o.dsn = tw.dsn()
		o.dbPID = tw.cmd.Process.Pid
		fmt.Fprintf(os.Stderr, "bench: private mariadbd on %s (buffer pool %s)\n", o.dsn, o.pool)
	}
	var res any
	var err error
	switch o.mode {
	case "jobs":
		res, err = runJobs(ctx, o)
	case "bigtable":
		res, err = runBigTable(ctx, o)
	default:
		err = fmt.Errorf("-mode must be jobs or bigtable, got %q", o.mode)
	}
	if err != nil {
		fail(err)
	}
	line, _ := json.Marshal(res)
	fmt.Println(string(line))
	if o.out != "" {
		f, err := os.OpenFile(o.out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, string(line))
			f.Close()
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: %s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// env is a benchmark database with the store open on it.
type env struct {
	admin *sql.DB
	db    string
	st    *store.Store
	cfg   *mysql.Config
	// pgURL is the benchmark database's URL on PostgreSQL ("" on MariaDB).
	pgURL string
}

// seq is the FROM clause of the numbers a..b as column seq: MariaDB's
// SEQUENCE engine, PostgreSQL's generate_series.
func (e *env) seq(a, b int) string {
	if e.pgURL != "" {
		return fmt.Sprintf("generate_series(%d::bigint, %d::bigint) AS g(seq)", a, b)
	}
	return fmt.Sprintf("seq_%d_to_%d", a, b)
}

// runsMB is the size of runs with its indexes (all its partitions).
func (e *env) runsMB(ctx context.Context) float64 {
	var mb float64
	if e.pgURL != "" {
		_ = e.st.DB().QueryRowContext(ctx, "SELECT COALESCE(SUM(pg_total_relation_size(relid)), 0)/1048576.0 FROM pg_partition_tree('runs')").Scan(&mb)
	} else {
		_ = e.admin.QueryRowContext(ctx, "SELECT (data_length + index_length)/1048576 FROM information_schema.tables WHERE table_schema = ? AND table_name = 'runs'", e.db).Scan(&mb)
	}
	return mb
}

// div is integer division (PostgreSQL divides integers as integers).
func (e *env) div() string {
	if e.pgURL != "" {
		return "/"
	}
	return "DIV"
}

func openEnv(ctx context.Context, o options, name string) (*env, func(), error) {
	if o.postgres != "" {
		return openPostgresEnv(ctx, o, name)
	}
	cfg, err := mysql.ParseDSN(o.dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("parse -dsn: %w", err)
	}
	ac := cfg.Clone()
	ac.DBName = ""
	ac.InterpolateParams = true
	admin, err := sql.Open("mysql", ac.FormatDSN())
	if err != nil {
		return nil, nil, err
	}
	db := fmt.Sprintf("ringjob_bench_%s_%d", name, time.Now().Unix())
	if o.dbName != "" {
		db = o.dbName
	}
	if !o.reuse {
		if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+db+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
			return nil, nil, fmt.Errorf("create database: %w", err)
		}
	}
	sc := cfg.Clone()
	sc.DBName = db
	st, err := store.OpenMySQL(ctx, sc.FormatDSN())
	if err != nil {
		return nil, nil, err
	}
	if _, err := st.Migrate(ctx); err != nil {
		return nil, nil, err
	}
	// The lock rows exist before any job, as on a real installation (the
	// first start of a scheduler would otherwise spread every job over them).
	if err := st.LockPartitionsEnsure(ctx, 1); err != nil {
		return nil, nil, err
	}
	e := &env{admin: admin, db: db, st: st, cfg: sc}
	cleanup := func() {
		st.Close()
		if !o.keep && !o.generate && !o.reuse {
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if _, err := admin.ExecContext(dctx, "DROP DATABASE IF EXISTS `"+db+"`"); err != nil {
				logf("drop database %s: %v", db, err)
			}
		} else {
			logf("kept database %s", db)
		}
		admin.Close()
	}
	return e, cleanup, nil
}

// everyIDs lists the every-second jobs of a table generated earlier.
func (e *env) everyIDs(ctx context.Context) ([]int64, error) {
	rows, err := e.st.DB().QueryContext(ctx, "SELECT id FROM jobs WHERE name LIKE 'every-%' ORDER BY id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

func (e *env) exec(ctx context.Context, q string, args ...any) error {
	_, err := e.st.DB().ExecContext(ctx, q, args...)
	return err
}

// createGroups inserts n groups with the counting target and returns the first id.
func (e *env) createGroups(ctx context.Context, n int, nowMs int64) (int64, error) {
	if err := e.exec(ctx, `INSERT INTO job_groups (app_name, title, members, created_ms, updated_ms)
 SELECT CONCAT('bench-', seq), '', '["noop://bench"]', ?, ? FROM `+e.seq(1, n), nowMs, nowMs); err != nil {
		return 0, fmt.Errorf("create %d groups: %w", n, err)
	}
	var first int64
	err := e.st.DB().QueryRowContext(ctx, "SELECT MIN(id) FROM job_groups WHERE app_name LIKE 'bench-%'").Scan(&first)
	return first, err
}

const jobInsert = `INSERT INTO jobs (group_id, name, description, schedule_type, schedule_conf, time_zone, misfire_policy, handler, params,
 route_strategy, block_strategy, shard_count, enabled, lock_partition, next_fire_ms, created_ms, updated_ms) `

// createDaily inserts n daily jobs spread over the groups, with fire times
// spread over the day (second s of the day for job s mod 86400).
func (e *env) createDaily(ctx context.Context, n, groups int, firstGroup int64, now time.Time) error {
	day := now.UTC().Truncate(24 * time.Hour).UnixMilli()
	nowMs := now.UnixMilli()
	for start := 0; start < n; start += 200_000 {
		cnt := min(200_000, n-start)
		q := jobInsert + `SELECT ? + (seq % ?), CONCAT('daily-', seq), '', 'cron',
 CONCAT(seq % 60, ' ', (seq DIV 60) % 60, ' ', (seq DIV 3600) % 24, ' * * ?'), 'UTC', 'do_nothing', '', '', 'first', 'SERIAL_EXECUTION', 1, 1, 0,
 ? + ((seq % 60) + ((seq DIV 60) % 60) * 60 + ((seq DIV 3600) % 24) * 3600) * 1000 + CASE WHEN ? + ((seq % 60) + ((seq DIV 60) % 60) * 60 + ((seq DIV 3600) % 24) * 3600) * 1000 - 60000 <= ? THEN 86400000 ELSE 0 END,
 ?, ? FROM ` + e.seq(start+1, start+cnt)
		q = strings.ReplaceAll(q, " DIV ", " "+e.div()+" ")
		if err := e.exec(ctx, q, firstGroup, groups, day, day, nowMs, nowMs, nowMs); err != nil {
			return fmt.Errorf("create daily jobs: %w", err)
		}
	}
	return nil
}

// createEvery inserts n every-second jobs (not due yet) in group g and returns their ids.
func (e *env) createEvery(ctx context.Context, n int, g int64, nowMs int64) ([]int64, error) {
	q := jobInsert + `SELECT ?, CONCAT('every-', seq), '', 'cron', '* * * * * ?', 'UTC', 'do_nothing', '', '', 'first', 'SERIAL_EXECUTION', 1, 1, 0, 0, ?, ?
 FROM ` + e.seq(1, n)
	if err := e.exec(ctx, q, g, nowMs, nowMs); err != nil {
		return nil, fmt.Errorf("create every-second jobs: %w", err)
	}
	rows, err := e.st.DB().QueryContext(ctx, "SELECT id FROM jobs WHERE name LIKE 'every-%' ORDER BY id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// retentionLog shows the worker's drops and purges with -timeline.
func retentionLog(timeline bool) *logrus.Entry {
	l := quietLog()
	if timeline {
		l.Logger.SetLevel(logrus.InfoLevel)
	}
	return l
}

func quietLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(os.Stderr)
	l.SetLevel(logrus.WarnLevel)
	return logrus.NewEntry(l)
}

// startScheduler starts one replica on the counting driver and makes the
// every-second jobs due from s0.
func (e *env) startScheduler(ctx context.Context, drv *countingDriver, s0 int64) (*scheduler.Scheduler, time.Duration, error) {
	reg := targets.NewRegistry()
	reg.Register("noop", drv)
	t := time.Now()
	sch, err := scheduler.New(scheduler.Options{Config: scheduler.Config{NodeID: "bench-node"}, Store: e.st, Drivers: reg, Log: quietLog(),
		Metrics: scheduler.NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		return nil, 0, err
	}
	if err := sch.Start(ctx); err != nil {
		return nil, 0, err
	}
	startup := time.Since(t)
	if err := e.exec(ctx, "UPDATE jobs SET next_fire_ms = ? WHERE name LIKE 'every-%'", s0*1000); err != nil {
		sch.Stop(context.Background())
		return nil, 0, err
	}
	return sch, startup, nil
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Until(t)):
		return true
	}
}

// apiServer serves the REST API in-process on a free port.
type apiServer struct {
	url, token string
	stop       func()
}

func (e *env) startAPI(ctx context.Context, sch *scheduler.Scheduler) (*apiServer, error) {
	reg := targets.NewRegistry()
	ident := identity.New(identity.Options{Store: e.st})
	svc := service.New(service.Options{Store: e.st, Drivers: reg, Scheduler: sch, OnAuthChange: ident.AuthChanged})
	// A configured admin token, new for each run: on a reused database the
	// token generated by an earlier run exists and would not be shown again.
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	if _, err := ident.EnsureAdminToken(ctx, token); err != nil {
		return nil, err
	}
	app := api.New(api.Options{Service: svc, Identity: ident})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() { _ = app.Listener(ln) }()
	return &apiServer{url: "http://" + ln.Addr().String(), token: token, stop: func() { _ = app.ShutdownWithTimeout(5 * time.Second) }}, nil
}

// timing is the latency of one request, n times.
type timing struct {
	Path  string  `json:"path"`
	N     int     `json:"n"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	Bytes int     `json:"bytes"`
}

func (a *apiServer) time(path string, n int) (timing, []byte, error) {
	var ds []float64
	var body []byte
	for i := 0; i < n; i++ {
		req, _ := http.NewRequest("GET", a.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+a.token)
		t := time.Now()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return timing{}, nil, err
		}
		body, err = io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return timing{}, nil, err
		}
		ds = append(ds, float64(time.Since(t).Microseconds())/1000)
		if res.StatusCode != 200 {
			return timing{}, nil, fmt.Errorf("GET %s: %d %s", path, res.StatusCode, body)
		}
	}
	sort.Float64s(ds)
	return timing{Path: path, N: n, P50Ms: ds[len(ds)/2], P99Ms: ds[min(len(ds)-1, len(ds)*99/100)], MaxMs: ds[len(ds)-1], Bytes: len(body)}, body, nil
}

type machine struct {
	Cores     int    `json:"cores"`
	GoVersion string `json:"go"`
	DB        string `json:"db"`
	BufPoolMB int64  `json:"db_buffer_pool_mb"`
	Load1     string `json:"load1_at_start"`
}

func describe(ctx context.Context, e *env) machine {
	m := machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version()}
	var pool int64
	if e.pgURL != "" {
		_ = e.admin.QueryRowContext(ctx, "SELECT 'PostgreSQL ' || current_setting('server_version'), pg_size_bytes(current_setting('shared_buffers'))").Scan(&m.DB, &pool)
	} else {
		_ = e.admin.QueryRowContext(ctx, "SELECT VERSION(), @@innodb_buffer_pool_size").Scan(&m.DB, &pool)
	}
	m.BufPoolMB = pool >> 20
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.Load1 = strings.Fields(string(b))[0]
	}
	return m
}

// peakRSS is this process's peak resident set (VmHWM) in MB.
func peakRSS() float64 { return procStatusMB("self", "VmHWM:") }

func procStatusMB(pid, key string) float64 {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// serverStartup starts a real ringjob server on the database and times it
// until /readyz answers 200; its RSS is read then.
func (e *env) serverStartup(ctx context.Context, bin string) (time.Duration, float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	addr := ln.Addr().String()
	ln.Close()
	u := e.pgURL
	if u == "" {
		u = fmt.Sprintf("mysql://%s@%s/%s", e.cfg.User, e.cfg.Addr, e.cfg.DBName)
	}
	cmd := exec.CommandContext(ctx, bin, "server", "--database-url", u, "--listen", addr, "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	t := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	for time.Since(t) < 2*time.Minute {
		res, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				took := time.Since(t)
				return took, procStatusMB(strconv.Itoa(cmd.Process.Pid), "VmRSS:"), nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0, 0, fmt.Errorf("server on %s not ready after 2 minutes", addr)
}

type jobsResult struct {
	Mode          string   `json:"mode"`
	Label         string   `json:"label"`
	At            string   `json:"at"`
	Machine       machine  `json:"machine"`
	DailyJobs     int      `json:"daily_jobs"`
	EveryJobs     int      `json:"every_second_jobs"`
	Groups        int      `json:"groups"`
	SetupS        float64  `json:"setup_s"`
	SchedStartMs  float64  `json:"scheduler_start_ms"`
	Window        window   `json:"every_second"`
	DailyFired    int64    `json:"daily_dispatched"`
	PeakRSSMB     float64  `json:"peak_rss_mb"`
	API           []timing `json:"api"`
	ServerStartMs float64  `json:"server_startup_ms,omitempty"`
	ServerRSSMB   float64  `json:"server_rss_mb,omitempty"`
}

func runJobs(ctx context.Context, o options) (*jobsResult, error) {
	e, cleanup, err := openEnv(ctx, o, "jobs")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	r := &jobsResult{Mode: "jobs", Label: o.label, At: time.Now().UTC().Format(time.RFC3339), Machine: describe(ctx, e), DailyJobs: o.daily, EveryJobs: o.every, Groups: o.groups}
	t := time.Now()
	groups := max(o.groups, 1)
	first, err := e.createGroups(ctx, groups, t.UnixMilli())
	if err != nil {
		return nil, err
	}
	if o.daily > 0 {
		if err := e.createDaily(ctx, o.daily, groups, first, t); err != nil {
			return nil, err
		}
	}
	ids, err := e.createEvery(ctx, o.every, first, t.UnixMilli())
	if err != nil {
		return nil, err
	}
	r.SetupS = time.Since(t).Seconds()
	logf("%d daily jobs in %d groups and %d every-second jobs created in %.1fs", o.daily, groups, len(ids), r.SetupS)

	start := time.Now()
	s0 := start.Unix() + 3
	stopAt := start.Add(3*time.Second + o.warmup + o.duration + time.Second)
	drv := newCountingDriver(ids, s0-1, int64(stopAt.Sub(start)/time.Second)+10)
	sch, startup, err := e.startScheduler(ctx, drv, s0)
	if err != nil {
		return nil, err
	}
	r.SchedStartMs = float64(startup.Microseconds()) / 1000
	a, err := e.startAPI(ctx, sch)
	if err != nil {
		sch.Stop(context.Background())
		return nil, err
	}
	// The API's lists while the scheduler runs.
	if sleepUntil(ctx, time.Unix(s0, 0).Add(o.warmup)) {
		var page map[string]any
		_, body, err := a.time("/api/v1/jobs?limit=100", 1)
		if err == nil {
			_ = json.Unmarshal(body, &page)
		}
		cursor, _ := page["next_cursor"].(string)
		for _, p := range []string{
			"/api/v1/jobs?limit=100",
			"/api/v1/jobs?limit=100&cursor=" + cursor,
			fmt.Sprintf("/api/v1/jobs?limit=100&group_id=%d", first+int64(groups)/2),
			"/api/v1/jobs?limit=100&name=daily-99999",
			"/api/v1/groups?limit=100",
			"/api/v1/runs?limit=100",
		} {
			tm, _, err := a.time(p, 10)
			if err != nil {
				logf("api: %v", err)
				continue
			}
			r.API = append(r.API, tm)
		}
	}
	sleepUntil(ctx, stopAt)
	a.stop()
	sch.Stop(context.Background())
	r.Window = drv.window(s0+int64(o.warmup/time.Second), stopAt.Unix()-1)
	r.DailyFired = drv.others.Load()
	r.PeakRSSMB = peakRSS()
	if o.serverBin != "" {
		took, rss, err := e.serverStartup(ctx, o.serverBin)
		if err != nil {
			logf("server start-up: %v", err)
		} else {
			r.ServerStartMs, r.ServerRSSMB = float64(took.Microseconds())/1000, rss
		}
	}
	return r, ctx.Err()
}

type purgeResult struct {
	Purged     int64   `json:"runs_purged"`
	LogsPurged int64   `json:"log_chunks_purged"`
	Seconds    float64 `json:"seconds"`
	RowsPerSec float64 `json:"rows_per_s"`
	Done       bool    `json:"caught_up"`
	Batch      int     `json:"batch_size"`
	PauseMs    float64 `json:"pause_ms"`
	DBShare    float64 `json:"db_share"`
	// BusyS is the time spent in the purge's DELETE statements; rows per
	// busy second is the statement's own speed, which the machine's other
	// load changes less than the wall-clock rate.
	BusyS          float64 `json:"busy_s"`
	RowsPerBusySec float64 `json:"rows_per_busy_s"`
}

type bigResult struct {
	Mode        string   `json:"mode"`
	Label       string   `json:"label"`
	At          string   `json:"at"`
	Machine     machine  `json:"machine"`
	Rows        int      `json:"rows"`
	Partitioned bool     `json:"partitioned"`
	Partitions  []string `json:"partitions_dropped,omitempty"`
	Days        int      `json:"days"`
	RetainDays  int      `json:"retain_days"`
	SetupS      float64  `json:"setup_s"`
	TableMB     float64  `json:"runs_table_mb"`
	EveryJobs   int      `json:"every_second_jobs"`
	PhaseA      window   `json:"phase_a_lag"`
	PhaseB      window   `json:"phase_b_lag_with_purge"`
	// Rounds are the windows of each round (-rounds), in order.
	Rounds []roundResult `json:"rounds,omitempty"`
	// CPU used (in cores) by mariadbd and by the bench process (scheduler,
	// roll-up, purge) in each phase: unlike wall-clock times, these do
	// not grow when other processes take the CPU.
	DBCoresA   float64 `json:"db_cores_phase_a"`
	DBCoresB   float64 `json:"db_cores_phase_b"`
	SelfCoresA float64 `json:"bench_cores_phase_a"`
	SelfCoresB float64 `json:"bench_cores_phase_b"`
	// The CPU of all other processes of the machine (the machine's busy
	// time less the database's and the bench's): the load the
	// measurement shared the cores with.
	OtherCoresA float64 `json:"other_cores_phase_a"`
	OtherCoresB float64 `json:"other_cores_phase_b"`
	// PurgeCPUPerMRows is the CPU seconds (mariadbd + bench, phase B minus
	// phase A's rate) per million runs purged.
	PurgeCPUPerMRows float64     `json:"purge_cpu_s_per_million_rows,omitempty"`
	Purge            purgeResult `json:"purge"`
	Stats            []timing    `json:"stats_endpoint"`
	PeakRSSMB        float64     `json:"peak_rss_mb"`
}

// roundResult is one round of phases A and B.
type roundResult struct {
	A       window   `json:"a"`
	B       window   `json:"b"`
	Dropped []string `json:"dropped,omitempty"`
}

// reportSegments is the number of identical segments (a power of two up
// to 32) a generated history of rows runs of every jobs over span ms splits
// into: each segment must hold whole cycles of the jobs and of the
// generator's patterns (seq % 50, seq % 200) and span a whole number of hours.
func reportSegments(rows, every int, span int64) int {
	cycle := every * 200 / gcd(every, 200)
	for k := 32; k > 1; k /= 2 {
		if rows%k == 0 && (rows/k)%cycle == 0 && span%(int64(k)*3_600_000) == 0 {
			return k
		}
	}
	return 1
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func runBigTable(ctx context.Context, o options) (*bigResult, error) {
	e, cleanup, err := openEnv(ctx, o, "big")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	r := &bigResult{Mode: "bigtable", Label: o.label, At: time.Now().UTC().Format(time.RFC3339), Machine: describe(ctx, e), Rows: o.rows, Days: o.days, RetainDays: o.retainDays, EveryJobs: o.every}
	var ids []int64
	r.Partitioned = o.partition
	if e.pgURL != "" {
		// The CPU of the PostgreSQL server (its postmaster and backends).
		if o.dbPID, err = e.postmasterPID(ctx); err != nil {
			logf("the database server's CPU is not measured: %v", err)
		}
	}
	if o.reuse {
		if ids, err = e.everyIDs(ctx); err != nil {
			return nil, err
		}
		// The count kept by the runs before (a COUNT(*) would read a whole
		// index of a 100 M-row table, and warm the buffer pool with it).
		if err := e.st.DB().QueryRowContext(ctx, "SELECT value FROM bench_meta WHERE name = 'runs'").Scan(&r.Rows); err != nil {
			if err := e.st.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM runs").Scan(&r.Rows); err != nil {
				return nil, err
			}
		}
		// The runs an earlier run left unfinished (its pre-read's fires after
		// it stopped) would be fired as overdue during this run's warm-up.
		res, err := e.st.DB().ExecContext(ctx, "DELETE FROM runs WHERE owner = 'bench-node' AND state IN (?, ?, ?)", kind.RunScheduled, kind.RunDispatching, kind.RunRunning)
		if err != nil {
			return nil, fmt.Errorf("delete the runs an earlier run left unfinished: %w", err)
		}
		left, _ := res.RowsAffected()
		r.Rows -= int(left)
		r.TableMB = e.runsMB(ctx)
		logf("reusing %s: %d runs (%.0f MB with indexes; %d unfinished runs of an earlier run deleted)", e.db, r.Rows, r.TableMB, left)
	} else {
		t := time.Now()
		g, err := e.createGroups(ctx, 1, t.UnixMilli())
		if err != nil {
			return nil, err
		}
		ids, err = e.createEvery(ctx, o.every, g, t.UnixMilli())
		if err != nil {
			return nil, err
		}
		// The generated history: runs of the every-second jobs, ids in time
		// order, spanning -days up to about an hour ago (from an hour
		// boundary); 2% failed (follow-up done). Row seq is scheduled at
		// base + seq*span/rows in integer arithmetic, so the history is
		// made of `segments` identical segments, each the first shifted
		// by a whole number of hours: the hour reports of the first are
		// computed and copied to the others (the GROUP BY over 100 M rows
		// would take longer than generating them).
		span := int64(o.days) * 86_400_000
		base := t.Add(-time.Hour).UnixMilli() - span
		base -= base % 3_600_000
		end := base + span
		segments := reportSegments(o.rows, o.every, span)
		segRows := o.rows / segments
		firstJob := ids[0]
		// On PostgreSQL each statement fills one day partition: the first
		// seq of each day (at(seq) = base + seq*span/rows >= day start).
		chunk := 500_000
		var dayStarts []int
		if o.partition {
			// Partition the empty table from the oldest day to be generated.
			if err := e.exec(ctx, "INSERT INTO runs (job_id, group_id, scheduled_ms, trigger_type, state, owner, params, message, created_ms) VALUES (0, 0, ?, 'schedule', 'succeeded', 'seed', '', '', ?)",
				base, base); err != nil {
				return nil, err
			}
			if _, err := e.st.RunPartitionsEnsure(ctx, store.RunPartitionsEnsureParams{NowMs: time.Now().UnixMilli(), AheadDays: 3}); err != nil {
				return nil, err
			}
			if err := e.exec(ctx, "DELETE FROM runs WHERE owner = 'seed'"); err != nil {
				return nil, err
			}
			if e.pgURL != "" {
				parts, _, err := e.st.RunPartitions(ctx)
				if err != nil {
					return nil, err
				}
				for _, p := range parts {
					if p.BeforeMs > base && p.BeforeMs < end {
						dayStarts = append(dayStarts, int((int64(o.rows)*(p.BeforeMs-base)+span-1)/span))
					}
				}
				chunk = o.rows
			}
		}
		// Rows go in with the secondary indexes in place: each index is
		// appended to at a few points (one per job for runs_fire), which
		// measured faster than building them afterwards by sorting.
		var segMaxID int64
		for done := 0; done < o.rows; {
			n := min(chunk, o.rows-done)
			if done < segRows {
				n = min(n, segRows-done)
			}
			for _, d := range dayStarts {
				if d > done {
					n = min(n, d-done)
					break
				}
			}
			at := "? + (seq * ?) " + e.div() + " ?"
			q := `INSERT INTO runs (job_id, group_id, scheduled_ms, shard_index, shard_total, attempt, sched_fire, trigger_type, state, owner, target, handler, params,
	 created_ms, dispatched_ms, finished_ms, late, result_code, message, followup)
	 SELECT ? + (seq % ?), ?, ` + at + `, 0, 1, 0, 1, 'schedule', CASE WHEN seq % 50 = 0 THEN 'failed' ELSE 'succeeded' END, 'old-node', 'noop://bench', '', '',
	 ` + at + ` - 2000, ` + at + ` + 15, ` + at + ` + 15 + (seq % 200), 0, CASE WHEN seq % 50 = 0 THEN 500 ELSE 200 END, '', CASE WHEN seq % 50 = 0 THEN 1 END
	 FROM ` + e.seq(done, done+n-1)
			if err := e.exec(ctx, q, firstJob, o.every, g, base, span, o.rows, base, span, o.rows, base, span, o.rows, base, span, o.rows); err != nil {
				return nil, fmt.Errorf("generate runs: %w", err)
			}
			done += n
			if done == segRows {
				if err := e.st.DB().QueryRowContext(ctx, "SELECT MAX(id) FROM runs").Scan(&segMaxID); err != nil {
					return nil, err
				}
			}
			if done/2_000_000 != (done-n)/2_000_000 || done == o.rows {
				logf("generated %d/%d runs (%.0fs, about %.0f MB)", done, o.rows, time.Since(t).Seconds(), e.runsMB(ctx))
			}
		}
		// The reports the roll-up would have made of that history (hour
		// buckets for all of it, minute buckets for the last two days), and its
		// watermark after the last generated run.
		logf("reports: hours of the first of %d segments, copied to the others", segments)
		segSpan := span / int64(segments)
		jobLevel := `INSERT INTO run_reports (resolution, group_id, job_id, bucket_ms, succeeded, failed, duration_sum_ms, duration_max_ms)
	 SELECT ?, group_id, job_id, scheduled_ms - scheduled_ms % ? AS b, SUM(CASE WHEN state = 'succeeded' THEN 1 ELSE 0 END), SUM(CASE WHEN state = 'failed' THEN 1 ELSE 0 END),
	 SUM(finished_ms - dispatched_ms), MAX(finished_ms - dispatched_ms) FROM runs WHERE id BETWEEN ? AND ? AND scheduled_ms >= ? GROUP BY group_id, job_id, b`
		if err := e.exec(ctx, jobLevel, "h", 3_600_000, 0, segMaxID, 0); err != nil {
			return nil, fmt.Errorf("generate reports: %w", err)
		}
		for i := int64(1); i < int64(segments); i++ {
			if err := e.exec(ctx, `INSERT INTO run_reports (resolution, group_id, job_id, bucket_ms, succeeded, failed, duration_sum_ms, duration_max_ms)
	 SELECT resolution, group_id, job_id, bucket_ms + ?, succeeded, failed, duration_sum_ms, duration_max_ms FROM run_reports WHERE resolution = 'h' AND bucket_ms < ?`,
				i*segSpan, base+segSpan); err != nil {
				return nil, fmt.Errorf("copy reports: %w", err)
			}
		}
		// Minute buckets of the last two days: the runs from the id of the
		// first run created then (a binary search on the key).
		minuteFrom := end - 2*86_400_000
		fromID, err := e.st.RunIDCreatedBefore(ctx, minuteFrom-10_000)
		if err != nil {
			return nil, err
		}
		if err := e.exec(ctx, jobLevel, "m", 60_000, fromID, int64(math.MaxInt64), minuteFrom); err != nil {
			return nil, fmt.Errorf("generate reports: %w", err)
		}
		for _, res := range []string{"h", "m"} {
			for _, up := range []string{
				`SELECT resolution, group_id, 0, bucket_ms, SUM(succeeded), SUM(failed), SUM(duration_sum_ms), MAX(duration_max_ms) FROM run_reports WHERE resolution = '` + res + `' AND job_id <> 0 GROUP BY resolution, group_id, bucket_ms`,
				`SELECT resolution, 0, 0, bucket_ms, SUM(succeeded), SUM(failed), SUM(duration_sum_ms), MAX(duration_max_ms) FROM run_reports WHERE resolution = '` + res + `' AND job_id = 0 AND group_id <> 0 GROUP BY resolution, bucket_ms`,
			} {
				if err := e.exec(ctx, `INSERT INTO run_reports (resolution, group_id, job_id, bucket_ms, succeeded, failed, duration_sum_ms, duration_max_ms) `+up); err != nil {
					return nil, fmt.Errorf("generate report levels: %w", err)
				}
			}
		}
		var maxID int64
		if err := e.st.DB().QueryRowContext(ctx, "SELECT MAX(id) FROM runs").Scan(&maxID); err != nil {
			return nil, err
		}
		if err := e.st.ReportApply(ctx, store.ReportApplyParams{To: store.ReportMark{RunID: maxID, Seq: 1, AtMs: time.Now().UnixMilli()}}); err != nil {
			return nil, err
		}
		analyze := "ANALYZE TABLE runs"
		if e.pgURL != "" {
			analyze = "ANALYZE runs"
		}
		if err := e.exec(ctx, analyze); err != nil {
			return nil, fmt.Errorf("analyze runs: %w", err)
		}
		r.SetupS = time.Since(t).Seconds()
		r.TableMB = e.runsMB(ctx)
		logf("%d runs over %d days (%.0f MB with indexes) and their reports in %.0fs", o.rows, o.days, r.TableMB, r.SetupS)
	}
	var startMaxID int64
	if err := e.st.DB().QueryRowContext(ctx, "SELECT COALESCE(MAX(id), 0) FROM runs").Scan(&startMaxID); err != nil {
		return nil, err
	}
	// countRuns keeps the number of runs for a later -reuse: the runs at
	// the start, less those purged, plus those created since (a key range).
	countRuns := func(purged int64) error {
		if e.pgURL != "" {
			return nil // no -reuse on PostgreSQL
		}
		var created int
		if err := e.st.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM runs WHERE id > ?", startMaxID).Scan(&created); err != nil {
			return err
		}
		return e.exec(ctx, "REPLACE INTO bench_meta (name, value) VALUES ('runs', ?)", int64(r.Rows)-purged+int64(created))
	}
	if e.pgURL == "" {
		if err := e.exec(ctx, "CREATE TABLE IF NOT EXISTS bench_meta (name VARCHAR(32) NOT NULL PRIMARY KEY, value BIGINT NOT NULL)"); err != nil {
			return nil, err
		}
	}
	if o.generate {
		return r, countRuns(0)
	}

	// In partitioned mode the runs purged are those of the days before the
	// cutoff's day that are gone at the end (dropped whole or by rows; drops
	// are spaced out, so a backlog may outlast the phase).
	var old, cut int64
	if o.partition {
		cut = time.Now().Add(-time.Duration(o.retainDays) * 24 * time.Hour).UnixMilli()
		cut -= cut % 86_400_000
		if err := e.st.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM runs WHERE scheduled_ms < ?", cut).Scan(&old); err != nil {
			return nil, fmt.Errorf("count the runs before the cutoff: %w", err)
		}
	}
	// The scheduler and the report roll-up run through all phases: A
	// (nothing purged) then B (the retention worker purges), -rounds times
	// in turn, each -duration long (B a second more, for the purge's last
	// statement to end within it).
	start := time.Now()
	s0 := start.Unix() + 3
	phaseLen := int64(o.duration / time.Second)
	first := s0 + int64(o.warmup/time.Second)
	round := 2*phaseLen + 1
	stopAt := time.Unix(first+int64(o.rounds)*round, 0)
	drv := newCountingDriver(ids, s0-1, int64(stopAt.Sub(start)/time.Second)+10)
	sch, _, err := e.startScheduler(ctx, drv, s0)
	if err != nil {
		return nil, err
	}
	defer sch.Stop(context.Background())
	roll, err := reports.New(reports.Options{Store: e.st, Node: "bench-node", Log: quietLog()})
	if err != nil {
		return nil, err
	}
	roll.Start(ctx)
	defer roll.Stop()
	w, err := retention.New(retention.Options{Config: retention.Config{Runs: retention.Age(time.Duration(o.retainDays) * 24 * time.Hour), BatchSize: o.batch, Pause: o.pause, DBShare: o.share, Partitioned: o.partition},
		Store: e.st, Node: "bench-node", Log: retentionLog(o.timeline), CountedOnly: true})
	if err != nil {
		return nil, err
	}

	var cpuA, cpuB cpuSpan
	var aRanges, bRanges [][2]int64
	sleepUntil(ctx, time.Unix(first, 0))
	for i := int64(0); i < int64(o.rounds) && ctx.Err() == nil; i++ {
		a0 := first + i*round
		b0, b1 := a0+phaseLen, a0+round
		c0 := takeCPU(o.dbPID)
		sleepUntil(ctx, time.Unix(b0, 0))
		c1 := takeCPU(o.dbPID)
		logf("phase B (round %d of %d): retention purges runs older than %d days while %d jobs fire every second", i+1, o.rounds, o.retainDays, o.every)
		pctx, pcancel := context.WithDeadline(ctx, time.Unix(b1, 0).Add(-time.Second))
		pt := time.Now()
		res, err := w.Cycle(pctx)
		r.Purge.Purged += res.Runs
		r.Purge.LogsPurged += res.Logs
		r.Purge.Seconds += time.Since(pt).Seconds()
		r.Purge.BusyS += res.Busy.Seconds()
		r.Purge.Done = err == nil
		r.Partitions = append(r.Partitions, res.Dropped...)
		if err != nil && pctx.Err() == nil {
			logf("purge: %v", err)
		}
		pcancel()
		sleepUntil(ctx, time.Unix(b1, 0))
		c2 := takeCPU(o.dbPID)
		cpuA.add(c1.since(c0))
		cpuB.add(c2.since(c1))
		aRanges, bRanges = append(aRanges, [2]int64{a0, b0}), append(bRanges, [2]int64{b0, b1 - 1})
		r.Rounds = append(r.Rounds, roundResult{A: drv.window(a0, b0), B: drv.window(b0, b1-1), Dropped: res.Dropped})
	}
	if o.partition { // counted after the measured time: the count reads what is left
		var left int64
		if err := e.st.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM runs WHERE scheduled_ms < ?", cut).Scan(&left); err != nil {
			return nil, fmt.Errorf("count the runs left before the cutoff: %w", err)
		}
		r.Purge.Purged = old - left
	}
	r.DBCoresA, r.SelfCoresA, r.OtherCoresA = cpuA.cores()
	r.DBCoresB, r.SelfCoresB, r.OtherCoresB = cpuB.cores()
	if r.Purge.Purged > 0 {
		extra := (r.DBCoresB + r.SelfCoresB - r.DBCoresA - r.SelfCoresA) * cpuB.wall.Seconds()
		r.PurgeCPUPerMRows = extra / float64(r.Purge.Purged) * 1e6
	}
	cfg := retention.Config{BatchSize: o.batch, Pause: o.pause, DBShare: o.share}.WithDefaults()
	r.Purge.Batch, r.Purge.PauseMs, r.Purge.DBShare = cfg.BatchSize, float64(cfg.Pause.Microseconds())/1000, cfg.DBShare
	if r.Purge.BusyS > 0 {
		r.Purge.RowsPerBusySec = float64(r.Purge.Purged) / r.Purge.BusyS
	}
	if r.Purge.Seconds > 0 {
		r.Purge.RowsPerSec = float64(r.Purge.Purged) / r.Purge.Seconds
	}
	if err := countRuns(r.Purge.Purged); err != nil {
		return nil, err
	}
	r.PhaseA = drv.windows(aRanges)
	r.PhaseB = drv.windows(bRanges)
	if o.timeline {
		for sec := first; sec < stopAt.Unix()-1; sec++ {
			w := drv.window(sec, sec+1)
			logf("second %s: p99 %.1f max %.1f ms, missing %d", time.Unix(sec, 0).UTC().Format("15:04:05"), w.LagP99Ms, w.LagMaxMs, w.Missing)
		}
	}
	logf("purged %d runs in %.1fs", r.Purge.Purged, r.Purge.Seconds)

	a, err := e.startAPI(ctx, sch)
	if err != nil {
		return nil, err
	}
	defer a.stop()
	for _, p := range []string{"/api/v1/stats?period=hour", "/api/v1/stats?period=day", "/api/v1/stats?period=day&resolution=minute", "/api/v1/stats?period=week",
		fmt.Sprintf("/api/v1/stats?period=day&job_id=%d", ids[0])} {
		tm, _, err := a.time(p, 50)
		if err != nil {
			return nil, err
		}
		r.Stats = append(r.Stats, tm)
	}
	r.PeakRSSMB = peakRSS()
	return r, ctx.Err()
}

// cpuSample is the CPU time used so far by the database server, by this
// process and by the whole machine.
type cpuSample struct {
	wall           time.Time
	db, self, busy time.Duration
}

// takeCPU samples the CPU times; dbPID is mariadbd's or PostgreSQL's
// postmaster (0: unknown). The server's time counts its process, its
// reaped children (cutime, cstime) and its live children (PostgreSQL's
// backends are processes; mariadbd has threads only).
func takeCPU(dbPID int) cpuSample {
	c := cpuSample{wall: time.Now()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		c.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if dbPID > 0 {
		if f := procStat(strconv.Itoa(dbPID)); len(f) > 14 {
			c.db = ticks(f[11], f[12], f[13], f[14])
		}
		if ents, err := os.ReadDir("/proc"); err == nil {
			ppid := strconv.Itoa(dbPID)
			for _, ent := range ents {
				if ent.Name()[0] < '0' || ent.Name()[0] > '9' {
					continue
				}
				if f := procStat(ent.Name()); len(f) > 12 && f[1] == ppid {
					c.db += ticks(f[11], f[12])
				}
			}
		}
	}
	// The machine: the first line of /proc/stat, all but idle and iowait.
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
		for i, v := range f[1:] {
			if i != 3 && i != 4 {
				c.busy += ticks(v)
			}
		}
	}
	return c
}

// procStat is the fields of /proc/PID/stat after the command name (which
// may hold spaces): state is [0], ppid [1], utime, stime, cutime and
// cstime [11] to [14], in clock ticks.
func procStat(pid string) []string {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil
	}
	return strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
}

// ticks sums clock ticks (100 a second).
func ticks(vs ...string) time.Duration {
	var n int64
	for _, v := range vs {
		t, _ := strconv.ParseInt(v, 10, 64)
		n += t
	}
	return time.Duration(n) * 10 * time.Millisecond
}

// cpuSpan is the CPU used over one or more intervals.
type cpuSpan struct {
	wall, db, self, busy time.Duration
}

func (c cpuSample) since(s cpuSample) cpuSpan {
	return cpuSpan{wall: c.wall.Sub(s.wall), db: c.db - s.db, self: c.self - s.self, busy: c.busy - s.busy}
}

func (s *cpuSpan) add(o cpuSpan) {
	s.wall, s.db, s.self, s.busy = s.wall+o.wall, s.db+o.db, s.self+o.self, s.busy+o.busy
}

// cores is the CPU used, in cores, by the database server, by this
// process and by all others (0 when the server's is unknown).
func (s cpuSpan) cores() (db, self, others float64) {
	secs := s.wall.Seconds()
	if secs <= 0 {
		return 0, 0, 0
	}
	return s.db.Seconds() / secs, s.self.Seconds() / secs, max(0, (s.busy-s.db-s.self).Seconds()/secs)
}
