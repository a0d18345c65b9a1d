package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/ringjob/ringjob/bench/hostinfo"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver of the admin connection

	"github.com/ringjob/ringjob/store"
)

// benchDB is the database a run measures: MariaDB (the default) or
// PostgreSQL (-postgres). It hides what differs: how the benchmark
// database is made and dropped, how its tables are named from the admin
// connection, and where the server's CPU and counters are read.
type benchDB struct {
	server string  // "mariadbd" or "postgres", for the report
	admin  *sql.DB // the server, no database selected
	// tables reads the benchmark database's tables with ? placeholders;
	// table names a table for it.
	tables *sql.DB
	table  func(name string) string
	// distinctFires counts distinct (job, time, shard, attempt) of runs.
	distinctFires string
	cpu           func() time.Duration // the server's CPU so far; -1 unknown
	status        func(ctx context.Context) map[string]int64
	// analyze, when set, is run on tables during the warm-up (PostgreSQL).
	analyze string
}

// openPostgresBench creates the benchmark database on the PostgreSQL
// server at serverURL, opens the store on it and migrates it. drop removes
// the database (after the store is closed).
func openPostgresBench(ctx context.Context, serverURL string, jobs int) (*benchDB, *store.Store, string, func(), error) {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, nil, "", nil, fmt.Errorf("-postgres %q: want postgres://USER@HOST:PORT/", serverURL)
	}
	adminURL := *u
	adminURL.Path = "/postgres"
	admin, err := sql.Open("pgx", adminURL.String())
	if err != nil {
		return nil, nil, "", nil, err
	}
	if err := admin.PingContext(ctx); err != nil {
		admin.Close()
		return nil, nil, "", nil, fmt.Errorf("connect to %s: %w", u.Host, err)
	}
	db := fmt.Sprintf("ringjob_bench_%d_%s", jobs, randHex(4))
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE "`+db+`" TEMPLATE template0 ENCODING 'UTF8'`); err != nil {
		admin.Close()
		return nil, nil, "", nil, fmt.Errorf("create database %s: %w", db, err)
	}
	drop := func() {
		dctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(dctx, `DROP DATABASE IF EXISTS "`+db+`" WITH (FORCE)`); err != nil {
			fmt.Fprintf(os.Stderr, "bench: drop database %s: %v\n", db, err)
		}
		admin.Close()
	}
	dbURL := *u
	dbURL.Path = "/" + db
	st, err := store.OpenPostgres(ctx, dbURL.String())
	if err != nil {
		drop()
		return nil, nil, "", nil, err
	}
	if _, err := st.Migrate(ctx); err != nil {
		st.Close()
		drop()
		return nil, nil, "", nil, err
	}
	b := &benchDB{server: "postgres", admin: admin, tables: st.DB(), table: func(n string) string { return n },
		distinctFires: "COUNT(DISTINCT (job_id, scheduled_ms, shard_index, attempt))",
		cpu:           func() time.Duration { return -1 }}
	if pm := pgPostmasterPID(ctx, admin); pm > 0 {
		b.cpu = func() time.Duration { return pgServerCPU(pm) }
	}
	// Statements are counted where pg_stat_statements is loaded
	// (bench/fresh-postgres.sh loads it), from the admin connection.
	var loaded string
	_ = admin.QueryRowContext(ctx, "SELECT current_setting('shared_preload_libraries')").Scan(&loaded)
	stmts := strings.Contains(loaded, "pg_stat_statements")
	if stmts {
		_, err := admin.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
		stmts = err == nil
	}
	b.status = func(ctx context.Context) map[string]int64 {
		out := pgStatus(ctx, st.DB())
		var n int64
		if stmts && admin.QueryRowContext(ctx, "SELECT COALESCE(SUM(s.calls), 0) FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1", db).Scan(&n) == nil {
			out["Questions"] = n
		}
		return out
	}
	return b, st, db, drop, nil
}

// pgPostmasterPID is the server's main process (the parent of this
// connection's backend), when the server runs on this machine; 0 if not.
func pgPostmasterPID(ctx context.Context, admin *sql.DB) int {
	var backend int
	if err := admin.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return 0
	}
	if ppid := procParent(backend); ppid > 1 && procCPU(ppid) >= 0 {
		return ppid
	}
	return 0
}

// procParent is the parent pid of a process (0 when unknown).
func procParent(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// After "pid (comm) ": state, ppid, ...
	_, rest, ok := strings.Cut(string(b), ") ")
	if !ok {
		return 0
	}
	f := strings.Fields(rest)
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// pgServerCPU is the CPU of a PostgreSQL server so far: its main process
// and every process it started (a backend per connection, the background
// workers). A backend that exited in between takes its time with it; the
// store's pool keeps its connections, so the benchmark's backends do not.
func pgServerCPU(postmaster int) time.Duration {
	total := procCPU(postmaster)
	if total < 0 {
		return -1
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || procParent(pid) != postmaster {
			continue
		}
		if c := procCPU(pid); c > 0 {
			total += c
		}
	}
	return total
}

// pgStatVars are the benchmark database's counters (pg_stat_database)
// whose change over the interval is reported.
var pgStatVars = []string{"xact_commit", "xact_rollback", "tup_returned", "tup_fetched", "tup_inserted", "tup_updated", "tup_deleted", "blks_read", "blks_hit"}

func pgStatus(ctx context.Context, db *sql.DB) map[string]int64 {
	out := map[string]int64{}
	vals := make([]int64, len(pgStatVars))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := db.QueryRowContext(ctx, "SELECT "+strings.Join(pgStatVars, ", ")+" FROM pg_stat_database WHERE datname = current_database()").Scan(ptrs...); err != nil {
		return out
	}
	for i, k := range pgStatVars {
		out[k] = vals[i]
	}
	return out
}

func describePostgres(ctx context.Context, admin *sql.DB) machine {
	m := machine{Cores: runtime.NumCPU(), CPU: hostinfo.CPUModel(), Kernel: hostinfo.Kernel(), GoVersion: runtime.Version()}
	_ = admin.QueryRowContext(ctx, "SELECT current_setting('server_version'), current_setting('synchronous_commit'), current_setting('shared_buffers')").
		Scan(&m.DBVersion, &m.DBFlush, &m.DBBufPool)
	return m
}
