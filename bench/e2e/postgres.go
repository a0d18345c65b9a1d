package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
)

// The pg: rows run the server on PostgreSQL: on the server -postgres names
// (a fresh database per row), or on a PostgreSQL of the benchmark's own,
// started here like its MariaDB (durable commits, 128 MiB of shared
// buffers, pg_stat_statements loaded so that statements can be counted).

// pgEnv is the PostgreSQL the pg: rows share.
type pgEnv struct {
	server *url.URL // postgres://USER@HOST:PORT/ (no database)
	admin  *sql.DB  // its postgres database
	pid    int      // the postmaster, when it runs on this machine (0: unknown)
	// stmts: pg_stat_statements is loaded and installed in the postgres
	// database, so statements per fire are counted.
	stmts bool
	stop  func()
}

// pgSettings are the server settings of the benchmark's own PostgreSQL.
var pgSettings = []string{
	"listen_addresses=127.0.0.1", "max_connections=300", "shared_buffers=128MB",
	"synchronous_commit=on", "fsync=on", "shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track=all",
}

func pgProgram(name string) (string, error) {
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(m) > 0 {
		return m[len(m)-1], nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s not found (install postgresql, or pass -postgres)", name)
}

// startPostgres initializes a data directory and starts a PostgreSQL of
// the benchmark's own on a free port. As root the server runs as the
// postgres user (it refuses to run as root).
func startPostgres(ctx context.Context) (*pgEnv, error) {
	initdb, err := pgProgram("initdb")
	if err != nil {
		return nil, err
	}
	postgres, err := pgProgram("postgres")
	if err != nil {
		return nil, err
	}
	// Not under the work directory: as root that is private to root.
	dir, err := os.MkdirTemp("", "ringjob-bench-e2e-pg-*")
	if err != nil {
		return nil, err
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root and no postgres user to run PostgreSQL as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	cmd := exec.CommandContext(ctx, initdb, "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	argv := []string{postgres, "-D", data, "-p", strconv.Itoa(port), "-k", dir}
	for _, s := range pgSettings {
		argv = append(argv, "-c", s)
	}
	logf, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	srv := exec.Command(argv[0], argv[1:]...)
	srv.Stdout, srv.Stderr = logf, logf
	srv.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := srv.Start(); err != nil {
		logf.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = srv.Wait(); logf.Close(); close(exited) }()
	stop := func() {
		_ = srv.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-srv.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		os.RemoveAll(dir)
	}
	u, _ := url.Parse(fmt.Sprintf("postgres://postgres@127.0.0.1:%d/?sslmode=disable", port))
	env, err := openPgEnv(ctx, u, 60*time.Second)
	if err != nil {
		stop()
		return nil, fmt.Errorf("%w\n%s", err, tail(filepath.Join(dir, "postgres.log"), 20))
	}
	env.pid, env.stop = srv.Process.Pid, stop
	return env, nil
}

// openPgEnv connects to the server at u (waiting up to wait for it to
// answer) and installs pg_stat_statements where it is loaded.
func openPgEnv(ctx context.Context, u *url.URL, wait time.Duration) (*pgEnv, error) {
	a := *u
	a.Path = "/postgres"
	admin, err := sql.Open("pgx", a.String())
	if err != nil {
		return nil, err
	}
	admin.SetMaxOpenConns(2)
	deadline := time.Now().Add(wait)
	for {
		if err = admin.PingContext(ctx); err == nil {
			break
		}
		if time.Now().After(deadline) {
			admin.Close()
			return nil, fmt.Errorf("postgres at %s did not answer: %w", u.Host, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	env := &pgEnv{server: u, admin: admin, stop: func() {}}
	var loaded string
	_ = admin.QueryRowContext(ctx, "SELECT current_setting('shared_preload_libraries')").Scan(&loaded)
	if strings.Contains(loaded, "pg_stat_statements") {
		_, err := admin.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
		env.stmts = err == nil
	}
	if env.pid == 0 {
		env.pid = pgPostmaster(ctx, admin)
	}
	return env, nil
}

// pgPostmaster is the server's main process (the parent of this
// connection's backend), when the server runs on this machine; 0 if not.
func pgPostmaster(ctx context.Context, admin *sql.DB) int {
	var backend int
	if err := admin.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(backend) + "/stat")
	if err != nil {
		return 0
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	if f := strings.Fields(rest); len(f) > 1 {
		ppid, _ := strconv.Atoi(f[1])
		return ppid
	}
	return 0
}

// dbURL is the URL of database db on the server.
func (p *pgEnv) dbURL(db string) string {
	u := *p.server
	u.Path = "/" + db
	return u.String()
}

// pgStatusVars are the row's database counters on PostgreSQL
// (pg_stat_database), plus "Questions": the statements pg_stat_statements
// counted for the database (nested statements included), named as
// MariaDB's for the statements-per-fire column.
var pgStatusVars = []string{"xact_commit", "xact_rollback", "tup_returned", "tup_fetched", "tup_inserted", "tup_updated", "tup_deleted", "blks_read", "blks_hit"}

func (p *pgEnv) status(ctx context.Context, db string) map[string]int64 {
	out := map[string]int64{}
	vals := make([]int64, len(pgStatusVars))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := p.admin.QueryRowContext(ctx, "SELECT "+strings.Join(pgStatusVars, ", ")+" FROM pg_stat_database WHERE datname = $1", db).Scan(ptrs...); err == nil {
		for i, k := range pgStatusVars {
			out[k] = vals[i]
		}
	}
	if p.stmts {
		var n int64
		if err := p.admin.QueryRowContext(ctx, "SELECT COALESCE(SUM(calls), 0) FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1", db).Scan(&n); err == nil {
			out["Questions"] = n
		}
	}
	return out
}

// runStates counts the interval's runs by state in database db.
func (p *pgEnv) runStates(ctx context.Context, db string, from, to time.Time) (map[string]int, error) {
	c, err := sql.Open("pgx", p.dbURL(db))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	rows, err := c.QueryContext(ctx, "SELECT state, COUNT(*) FROM runs WHERE scheduled_ms >= $1 AND scheduled_ms < $2 GROUP BY state", from.UnixMilli(), to.UnixMilli())
	return countByState(rows, err)
}

func (p *pgEnv) version(ctx context.Context) string {
	var v string
	_ = p.admin.QueryRowContext(ctx, "SELECT current_setting('server_version')").Scan(&v)
	return "PostgreSQL " + v
}
