package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// mariadbSettings are the server settings of the benchmark's own MariaDB:
// durable commits and the other notable settings of the machine's shared
// server (docs/benchmarks.md, Machine), so the figures mean what they would
// on a production-like server.
var mariadbSettings = []string{
	"--innodb-flush-log-at-trx-commit=1",
	"--innodb-buffer-pool-size=128M",
	"--innodb-flush-method=O_DIRECT",
	"--innodb-doublewrite=ON",
	"--innodb-log-file-size=96M",
	"--skip-log-bin",
	"--innodb-autoinc-lock-mode=1",
	"--performance-schema=OFF",
	"--max-connections=500",
	"--character-set-server=utf8mb4",
	"--collation-server=utf8mb4_unicode_ci",
}

// startMariaDB installs a data directory under dir and starts a mariadbd of
// the benchmark's own on a free port, so that its CPU and statement counters
// are the benchmark's alone (the machine's shared server is busy with other
// people's tests). It returns the server-level DSN.
func startMariaDB(ctx context.Context, dir string) (*child, string, error) {
	find := func(name string) (string, error) {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
		for _, d := range []string{"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"} {
			if p := filepath.Join(d, name); fileExists(p) {
				return p, nil
			}
		}
		return "", fmt.Errorf("%s not found (install mariadb-server, or pass -dsn)", name)
	}
	mariadbd, err := find("mariadbd")
	if err != nil {
		return nil, "", err
	}
	install, err := find("mariadb-install-db")
	if err != nil {
		return nil, "", err
	}
	data := filepath.Join(dir, "data")
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, "", err
	}
	user := []string{}
	if os.Geteuid() == 0 {
		user = []string{"--user=root"}
	}
	args := append([]string{"--no-defaults", "--datadir=" + data, "--tmpdir=" + tmp, "--auth-root-authentication-method=normal", "--skip-test-db"}, user...)
	if out, err := exec.CommandContext(ctx, install, args...).CombinedOutput(); err != nil {
		return nil, "", fmt.Errorf("mariadb-install-db: %w\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	argv := append([]string{mariadbd, "--no-defaults", "--datadir=" + data, "--tmpdir=" + tmp,
		"--socket=" + filepath.Join(dir, "s"), "--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1",
		"--pid-file=" + filepath.Join(dir, "mariadbd.pid")}, mariadbSettings...)
	argv = append(argv, user...)
	c, err := startChild(ctx, dir, "mariadbd", nil, "", 0, argv...)
	if err != nil {
		return nil, "", err
	}
	dsn := fmt.Sprintf("root@tcp(127.0.0.1:%d)/", port)
	db, err := sql.Open("mysql", dsn+"?timeout=1s")
	if err != nil {
		c.stop(time.Second)
		return nil, "", err
	}
	defer db.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if err := db.PingContext(ctx); err == nil {
			return c, dsn, nil
		}
		select {
		case <-c.exited:
			return nil, "", fmt.Errorf("mariadbd exited: %v\n%s", c.err, tail(c.out, 20))
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.stop(5 * time.Second)
			return nil, "", fmt.Errorf("mariadbd did not answer within 60 s:\n%s", tail(c.out, 20))
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// statusVars are the server counters compared before and after the interval.
var statusVars = []string{
	"Questions", "Com_select", "Com_insert", "Com_update", "Com_delete", "Com_commit", "Com_begin", "Com_rollback",
	"Innodb_data_fsyncs", "Innodb_log_writes", "Handler_update", "Handler_write", "Handler_read_key", "Com_insert_select",
}

func globalStatus(ctx context.Context, db *sql.DB) map[string]int64 {
	out := map[string]int64{}
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('"+strings.Join(statusVars, "','")+"')")
	if err != nil {
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if rows.Scan(&k, &v) == nil {
			n, _ := strconv.ParseInt(v, 10, 64)
			out[k] = n
		}
	}
	return out
}

// dbPID finds the database server's process through its pid file, or 0.
func dbPID(ctx context.Context, db *sql.DB) int {
	var pidFile, dataDir string
	if err := db.QueryRowContext(ctx, "SELECT @@pid_file, @@datadir").Scan(&pidFile, &dataDir); err != nil {
		return 0
	}
	if !filepath.IsAbs(pidFile) {
		pidFile = filepath.Join(dataDir, pidFile)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
