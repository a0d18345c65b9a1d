// Command e2e is the end-to-end benchmark of record: the real `ringjob
// server` binary on MariaDB, dispatching every-second jobs to real targets in
// processes of their own, measured from the targets' side.
//
//	go run ./bench/e2e -rows "xxl-batch=1000,5000 lambda=500 local=100" -duration 60s
//
// For each row (a target kind and a number of jobs N) it:
//
//  1. creates a fresh database on the benchmark's own mariadbd (started here
//     with durable settings, so that its CPU and statement counters are the
//     benchmark's alone; -dsn uses another server instead);
//  2. starts the target: an XXL-JOB executor built on our SDK (xxl-sdk), a
//     minimal executor that calls back in batches like the Java core
//     (xxl-batch), the Lambda emulator (`ringjob dev lambda`) running a
//     function, or nothing (local: the server runs a declared command);
//  3. starts `ringjob server` and creates a group and N enabled every-second
//     cron jobs through the REST API;
//  4. after a warm-up, measures for -duration, from the target's side: fires
//     expected and received, missing and duplicate fires by scheduled time,
//     lag (arrival at the target minus the scheduled time), and, for XXL
//     executors, the time from a callback to its acknowledgement (the server
//     acknowledges only what it has recorded); from /proc, the CPU of the
//     server, the database, the targets and everything else; from the
//     database's counters, statements per fire; and, a few seconds after the
//     interval, the runs of the interval that have no final state yet.
//
// A row prefixed pg: (pg:xxl-batch=1000) runs the server on PostgreSQL
// instead (postgres.go): a fresh database per row on a PostgreSQL of the
// benchmark's own, or on the server -postgres names; its CPU is the
// postmaster's and its backends', its statements pg_stat_statements'.
//
// With -workflows N it runs instead one workflow row (workflow.go): N
// workflows of ten nodes over the xxl-batch executor, each triggered once in
// the same second, every node run counted at the executor and in the API.
//
// It prints one table row per (target, N) and, with -doc, writes the table
// into docs/benchmarks.md between its bench-e2e markers. -out appends one
// JSON line per row. Target processes are this binary started again with
// -role (and, for Lambda, a copy of it as the function's bootstrap).
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ringjob/ringjob/bench/hostinfo"

	_ "github.com/go-sql-driver/mysql"
)

type options struct {
	rows      []rowSpec
	duration  time.Duration
	warmup    time.Duration
	settle    time.Duration
	dsn       string
	serverBin string
	doc       string
	out       string
	keep      bool
	label     string
	lambdaCon int
	profile   string
	noCalls   bool
	maxConns  int
	extraYAML string
	workflows int
	postgres  string
}

type rowSpec struct {
	target string
	jobs   int
	// period is the seconds between a job's fires: 1 (every second) or, for
	// a +burst row, burstPeriod: every job fires in the same second, then
	// nothing until the next burst.
	period int
	// postgres: the server runs on PostgreSQL (a pg: row), not MariaDB.
	postgres bool
}

// burstPeriod is the seconds between the bursts of a +burst row.
const burstPeriod = 10

var targetKinds = map[string]string{
	"xxl-batch": "HTTP executor, minimal, batched callbacks like the Java core",
	"xxl-sdk":   "HTTP executor on our SDK (package executor)",
	"lambda":    "Lambda emulator (ringjob dev lambda), synchronous invoke",
	"local":     "local command (a process per fire)",
}

func parseRows(s string) ([]rowSpec, error) {
	var out []rowSpec
	for _, part := range strings.Fields(s) {
		spec, pg := strings.CutPrefix(part, "pg:")
		kind, ns, ok := strings.Cut(spec, "=")
		kind, mode, _ := strings.Cut(kind, "+")
		if _, known := targetKinds[kind]; !ok || !known || (mode != "" && mode != "burst") {
			return nil, fmt.Errorf("-rows: %q: want [pg:]TARGET[+burst]=N[,N...] with TARGET one of xxl-batch, xxl-sdk, lambda, local", part)
		}
		period := 1
		if mode == "burst" {
			period = burstPeriod
		}
		for _, n := range strings.Split(ns, ",") {
			v, err := strconv.Atoi(n)
			if err != nil || v < 1 {
				return nil, fmt.Errorf("-rows: %q: %q is not a positive number of jobs", part, n)
			}
			out = append(out, rowSpec{target: kind, jobs: v, period: period, postgres: pg})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-rows: no rows")
	}
	return out, nil
}

func main() {
	// Roles first: a function process or a local command must not parse the
	// orchestrator's flags.
	if os.Getenv("AWS_LAMBDA_RUNTIME_API") != "" {
		runFunction()
		return
	}
	var o options
	var rows, role string
	var ro roleOptions
	flag.StringVar(&rows, "rows", "xxl-batch=1000,5000,10000 xxl-sdk=1000,5000 lambda=1000 local=50,200", "rows to run: TARGET[+burst]=N[,N...] separated by spaces; TARGET is xxl-batch, xxl-sdk, lambda or local; +burst: the N jobs fire all in the same second every 10 s instead of every second; a pg: prefix (pg:xxl-batch=1000) runs the server on PostgreSQL instead of MariaDB")
	flag.DurationVar(&o.duration, "duration", 60*time.Second, "measured interval of each row")
	flag.DurationVar(&o.warmup, "warmup", 5*time.Second, "time between the last job created and the interval")
	flag.DurationVar(&o.settle, "settle", 5*time.Second, "wait after the interval before counting runs without a final state")
	flag.StringVar(&o.dsn, "dsn", "", "server-level go-sql-driver DSN of the MariaDB to use (default: start one of the benchmark's own)")
	flag.StringVar(&o.postgres, "postgres", "", "server-level URL (postgres://USER@HOST:PORT/) of the PostgreSQL for pg: rows, where the user may create databases (default: start one of the benchmark's own)")
	flag.StringVar(&o.serverBin, "server-bin", "", "ringjob binary to run (default: go build ./cmd/ringjob)")
	flag.StringVar(&o.doc, "doc", "", "write the table into this markdown file between <!-- bench-e2e:begin --> and <!-- bench-e2e:end -->")
	flag.StringVar(&o.out, "out", "", "append one JSON line per row to this file")
	flag.BoolVar(&o.keep, "keep", false, "keep the databases and the work directory")
	flag.StringVar(&o.label, "label", "", "free-form label for the table and the JSON")
	flag.StringVar(&o.profile, "server-cpuprofile", "", "write a CPU profile of the server (20 s from the start of the interval, through /debug/pprof) to DIR/TARGET-N.pprof")
	flag.BoolVar(&o.noCalls, "no-callbacks", false, "diagnostic: the xxl-batch executor never calls back, to see the dispatch path alone (runs stay running)")
	flag.IntVar(&o.maxConns, "max-conns", 0, "the server's executors.max_connections_per_executor (0 = its default)")
	flag.StringVar(&o.extraYAML, "server-yaml", "", "YAML appended to the server's configuration (for A/B runs), e.g. $'scheduler:\\n  fast_pool:\\n    workers: 1000'")
	flag.IntVar(&o.lambdaCon, "lambda-concurrency", 64, "function processes the emulator may run at once")
	flag.IntVar(&o.workflows, "workflows", 0, "instead of -rows: N workflows of 10 nodes (1 -> 4 -> 4 -> 1) over the xxl-batch executor, each triggered once, all in the same second; counts every node run at the executor and in the API")
	flag.StringVar(&role, "role", "", "internal: run as a target process (xxl-batch, xxl-sdk, local-cmd)")
	flag.StringVar(&ro.admin, "admin", "", "internal (role): server URL")
	flag.StringVar(&ro.token, "token", "", "internal (role): executor token")
	flag.StringVar(&ro.app, "app", "", "internal (role): app name")
	flag.StringVar(&ro.listen, "listen", "127.0.0.1:0", "internal (role): listen address")
	flag.StringVar(&ro.rec, "rec", "", "internal (role): record file")
	flag.BoolVar(&ro.noCalls, "role-no-callbacks", false, "internal (role): never call back")
	flag.Parse()

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	var err error
	switch role {
	case "":
		if o.rows, err = parseRows(rows); err == nil {
			err = orchestrate(ctx, o)
		}
	case "xxl-batch":
		err = runBatchExecutor(ctx, ro)
	case "xxl-sdk":
		err = runSDKExecutor(ctx, ro)
	case "local-cmd":
		err = runLocalCommand(ro.rec)
	default:
		err = fmt.Errorf("unknown -role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/e2e:", err)
		os.Exit(1)
	}
}

// environment is what every row shares.
type environment struct {
	o         options
	work      string
	self      string // this binary
	ringjob   string // the server binary
	serverDSN string
	admin     *sql.DB
	dbPID     int
	machine   machine
	pg        *pgEnv // for pg: rows; nil without
}

func orchestrate(ctx context.Context, o options) error {
	work, err := os.MkdirTemp("", "ringjob-bench-e2e-*")
	if err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(work)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	env := &environment{o: o, work: work, self: self, ringjob: o.serverBin}
	if env.ringjob == "" {
		env.ringjob = filepath.Join(work, "ringjob")
		fmt.Fprintln(os.Stderr, "building ./cmd/ringjob ...")
		if err := run(ctx, "go", "build", "-o", env.ringjob, "./cmd/ringjob"); err != nil {
			return fmt.Errorf("build the server (run from the repository root): %w", err)
		}
	}
	needMaria, needPG := o.workflows > 0, false
	for _, r := range o.rows {
		needMaria, needPG = needMaria || !r.postgres, needPG || r.postgres
	}
	if needPG {
		if o.postgres != "" {
			u, err := url.Parse(o.postgres)
			if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
				return fmt.Errorf("-postgres %q: want postgres://USER@HOST:PORT/", o.postgres)
			}
			if env.pg, err = openPgEnv(ctx, u, 10*time.Second); err != nil {
				return err
			}
		} else {
			fmt.Fprintln(os.Stderr, "starting the benchmark's own PostgreSQL ...")
			if env.pg, err = startPostgres(ctx); err != nil {
				return err
			}
		}
		defer env.pg.stop()
		defer env.pg.admin.Close()
		env.machine.PGVersion = env.pg.version(ctx)
		if !env.pg.stmts {
			fmt.Fprintln(os.Stderr, "   pg_stat_statements is not loaded on that PostgreSQL: pg: rows count no statements")
		}
	}
	env.serverDSN = o.dsn
	if !needMaria {
		pgv := env.machine.PGVersion
		env.machine = machine{Cores: runtime.NumCPU(), CPU: hostinfo.CPUModel(), Kernel: hostinfo.Kernel(), GoVersion: runtime.Version(), PGVersion: pgv}
		return runRows(ctx, env)
	}
	if env.serverDSN == "" {
		fmt.Fprintln(os.Stderr, "starting the benchmark's own mariadbd ...")
		db, dsn, err := startMariaDB(ctx, filepath.Join(work, "mariadb"))
		if err != nil {
			return err
		}
		defer db.stop(30 * time.Second)
		env.serverDSN = dsn
	}
	env.admin, err = sql.Open("mysql", env.serverDSN)
	if err != nil {
		return err
	}
	defer env.admin.Close()
	env.admin.SetMaxOpenConns(2)
	env.dbPID = dbPID(ctx, env.admin)
	pgv := env.machine.PGVersion
	env.machine = describeMachine(ctx, env.admin)
	env.machine.PGVersion = pgv

	if o.workflows > 0 {
		fmt.Fprintf(os.Stderr, "== %d workflow runs of %d nodes, triggered in the same second\n", o.workflows, wfNodes)
		r, err := runWorkflowRow(ctx, env, o.workflows)
		if err != nil {
			return fmt.Errorf("workflows: %w", err)
		}
		printWorkflowRow(os.Stdout, r)
		if o.out != "" {
			return appendJSON(o.out, r)
		}
		return nil
	}
	return runRows(ctx, env)
}

func runRows(ctx context.Context, env *environment) error {
	o := env.o
	var results []*rowResult
	for _, spec := range o.rows {
		fmt.Fprintf(os.Stderr, "== %s, %d every-second jobs%s\n", spec.target, spec.jobs, map[bool]string{true: ", on PostgreSQL"}[spec.postgres])
		r, err := runRow(ctx, env, spec)
		if err != nil {
			return fmt.Errorf("%s with %d jobs: %w", spec.target, spec.jobs, err)
		}
		results = append(results, r)
		printRow(os.Stdout, r, len(results) == 1)
		if o.out != "" {
			if err := appendJSON(o.out, r); err != nil {
				return err
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if o.doc != "" {
		if err := writeDoc(o.doc, results, env.machine, o); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wrote the table into %s\n", o.doc)
	}
	return nil
}

func run(ctx context.Context, name string, args ...string) error {
	cmd := execCommand(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// machine describes where the benchmark ran.
type machine struct {
	Cores     int    `json:"cores"`
	CPU       string `json:"cpu,omitempty"` // model name: figures compare only on the same model
	Kernel    string `json:"kernel"`
	GoVersion string `json:"go"`
	DBVersion string `json:"db_version"`
	DBFlush   string `json:"innodb_flush_log_at_trx_commit"`
	PGVersion string `json:"postgres_version,omitempty"`
}

func describeMachine(ctx context.Context, db *sql.DB) machine {
	m := machine{Cores: runtime.NumCPU(), CPU: hostinfo.CPUModel(), Kernel: hostinfo.Kernel(), GoVersion: runtime.Version()}
	_ = db.QueryRowContext(ctx, "SELECT VERSION(), @@innodb_flush_log_at_trx_commit").Scan(&m.DBVersion, &m.DBFlush)
	return m
}

// pct is nearest-rank percentiles of a sample, in milliseconds.
type pct struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func percentiles(ms []float64) pct {
	if len(ms) == 0 {
		return pct{}
	}
	sort.Float64s(ms)
	at := func(q float64) float64 {
		i := int(q*float64(len(ms))+0.999999) - 1
		return ms[min(max(i, 0), len(ms)-1)]
	}
	return pct{N: len(ms), P50: at(0.50), P99: at(0.99), Max: ms[len(ms)-1]}
}
