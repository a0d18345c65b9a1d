package main

import (
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// throwaway is a private mariadbd for the benchmark, so its buffer pool and
// its load are its own (the machine's shared server has a 128 MB pool and
// other users).
type throwaway struct {
	dir  string
	port int
	cmd  *exec.Cmd
	keep bool // a -datadir given: left in place for a later run
}

// startThrowaway starts a private mariadbd in a temporary directory, or in
// keepDir (created on first use, kept afterwards) when it is not empty.
func startThrowaway(pool, keepDir string) (*throwaway, error) {
	dir := keepDir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "ringjob-bench-lifecycle-"); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	if _, err := os.Stat(filepath.Join(data, "mysql")); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		inst := exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+data, "--user=root", "--auth-root-authentication-method=normal", "--skip-test-db")
		if out, err := inst.CombinedOutput(); err != nil {
			if keepDir == "" {
				os.RemoveAll(dir)
			}
			return nil, fmt.Errorf("mariadb-install-db: %v\n%s", err, out)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	bin, err := exec.LookPath("mariadbd")
	if err != nil {
		bin = "/usr/sbin/mariadbd"
	}
	cmd := exec.Command(bin, "--no-defaults", "--datadir="+data, "--socket="+filepath.Join(dir, "s"), "--port="+strconv.Itoa(port),
		"--bind-address=127.0.0.1", "--user=root", "--tmpdir="+dir, "--innodb-buffer-pool-size="+pool, "--innodb-log-file-size=512M",
		"--innodb-flush-log-at-trx-commit=1", "--max-connections=500", "--log-error="+filepath.Join(dir, "err.log"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		if keepDir == "" {
			os.RemoveAll(dir)
		}
		return nil, fmt.Errorf("start mariadbd: %w", err)
	}
	tw := &throwaway{dir: dir, port: port, cmd: cmd, keep: keepDir != ""}
	deadline := time.Now().Add(60 * time.Second)
	for {
		db, _ := sql.Open("mysql", tw.dsn())
		err := db.Ping()
		db.Close()
		if err == nil {
			return tw, nil
		}
		if time.Now().After(deadline) {
			tw.stop()
			return nil, fmt.Errorf("mariadbd did not come up: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (tw *throwaway) dsn() string { return fmt.Sprintf("root@tcp(127.0.0.1:%d)/", tw.port) }

func (tw *throwaway) stop() {
	_ = tw.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = tw.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = tw.cmd.Process.Kill()
		<-done
	}
	if !tw.keep {
		os.RemoveAll(tw.dir)
	}
}
