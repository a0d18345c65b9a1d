package faults_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"
)

const (
	adminToken = "faults-admin-token-0123456789abcdef"
	execToken  = "faults-executor-token-0123456789"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func findProgram(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range []string{"/usr/sbin", "/usr/local/sbin", "/usr/bin"} {
		if _, err := os.Stat(filepath.Join(d, name)); err == nil {
			return filepath.Join(d, name)
		}
	}
	t.Skipf("%s not found: the fault suite needs MariaDB installed", name)
	return ""
}

// mariadb is a throwaway mariadbd this test starts, kills and restarts on
// one data directory and port.
type mariadb struct {
	t      *testing.T
	bin    string
	dir    string
	port   int
	cmd    *exec.Cmd
	exited chan struct{}
}

func startMariaDB(t *testing.T) *mariadb {
	t.Helper()
	m := &mariadb{t: t, bin: findProgram(t, "mariadbd"), dir: t.TempDir(), port: freePort(t)}
	install := findProgram(t, "mariadb-install-db")
	require.NoError(t, os.Mkdir(filepath.Join(m.dir, "tmp"), 0o700))
	out, err := exec.Command(install, "--no-defaults", "--datadir="+filepath.Join(m.dir, "data"), "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db").CombinedOutput()
	require.NoError(t, err, "mariadb-install-db: %s", out)
	m.start()
	t.Cleanup(func() {
		if m.running() {
			_ = m.cmd.Process.Kill()
			<-m.exited
		}
	})
	db := m.open("")
	defer db.Close()
	_, err = db.Exec("CREATE DATABASE ringjob")
	require.NoError(t, err)
	return m
}

func (m *mariadb) start() {
	m.t.Helper()
	m.cmd = exec.Command(m.bin, "--no-defaults", "--datadir="+filepath.Join(m.dir, "data"), "--socket="+filepath.Join(m.dir, "s"),
		fmt.Sprintf("--port=%d", m.port), "--bind-address=127.0.0.1", "--user=root", "--tmpdir="+filepath.Join(m.dir, "tmp"),
		"--pid-file="+filepath.Join(m.dir, "pid"), "--log-error="+filepath.Join(m.dir, "mariadbd.log"),
		"--innodb-buffer-pool-size=128M", "--max-connections=1000", "--skip-name-resolve")
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(m.t, m.cmd.Start())
	m.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(m.cmd, m.exited)
	deadline := time.Now().Add(60 * time.Second)
	for {
		db := m.open("")
		err := db.Ping()
		db.Close()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || !m.running() {
			log, _ := os.ReadFile(filepath.Join(m.dir, "mariadbd.log"))
			m.t.Fatalf("mariadbd did not start: %v\n%s", err, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (m *mariadb) running() bool {
	select {
	case <-m.exited:
		return false
	default:
		return m.cmd != nil
	}
}

// stop sends sig and waits for the server to exit.
func (m *mariadb) stop(sig syscall.Signal) {
	m.t.Helper()
	require.NoError(m.t, m.cmd.Process.Signal(sig))
	select {
	case <-m.exited:
	case <-time.After(60 * time.Second):
		m.t.Fatalf("mariadbd did not exit after %v", sig)
	}
}

func (m *mariadb) open(db string) *sql.DB {
	m.t.Helper()
	d, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s?timeout=2s", m.port, db))
	require.NoError(m.t, err)
	return d
}

func (m *mariadb) url() string { return fmt.Sprintf("mysql://root@127.0.0.1:%d/ringjob", m.port) }

// replica is one `ringjob server` process.
type replica struct {
	name    string
	port    int
	cfg     string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
	paused  bool
}

func (r *replica) base() string { return fmt.Sprintf("http://127.0.0.1:%d", r.port) }

func (r *replica) running() bool {
	if r.cmd == nil {
		return false
	}
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

type cluster struct {
	t        *testing.T
	bin      string
	db       database
	replicas []*replica
	exec     countingExecutor
	jobs     int
	jobSpec  func(i int, spec map[string]any)
	group    int64 // the executor's group, made by setup
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func ringjobBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ringjob-faults-bin-*")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "ringjob")
		out, err := exec.Command("go", "build", "-o", binPath, "../../cmd/ringjob").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

// newCluster starts mariadbd (or PostgreSQL), the executor and the replicas, and creates
// jobs every-second jobs on the executor.
func newCluster(t *testing.T, replicas, jobs int) *cluster {
	return newClusterWith(t, replicas, jobs, clusterOptions{})
}

// clusterOptions vary a cluster: Scheduler is YAML appended to each
// replica's scheduler section (indented two spaces); RunDelay slows the
// executor's answer to each /run.
type clusterOptions struct {
	Scheduler string
	RunDelay  time.Duration
	// Job, when set, changes the fields of job i before it is created
	// (misfire policy, retries).
	Job func(i int, spec map[string]any)
	// SDK runs the jobs on an executor built with our executor SDK
	// (executor/) instead of the Java-style test executor.
	SDK bool
	// Postgres runs the replicas on a throwaway PostgreSQL server instead
	// of a throwaway mariadbd.
	Postgres bool
}

// countingExecutor is the executor the jobs run on, counting arrivals.
type countingExecutor interface {
	url() string
	all() []arrival
	pendingCallbacks() int
	setAdmins(func() []string)
	down()
	up()
	close()
}

func newClusterWith(t *testing.T, replicas, jobs int, o clusterOptions) *cluster {
	t.Helper()
	c := &cluster{t: t, bin: ringjobBinary(t), jobs: jobs, jobSpec: o.Job}
	if o.Postgres {
		c.db = startPostgres(t)
	} else {
		c.db = startMariaDB(t)
	}
	if o.SDK {
		c.exec = startSDKExecutor(t, o.RunDelay)
	} else {
		c.exec = startExecutor(t, o.RunDelay)
	}
	dir := t.TempDir()
	for i := 0; i < replicas; i++ {
		r := &replica{name: fmt.Sprintf("r%d", i+1), port: freePort(t)}
		r.cfg = filepath.Join(dir, r.name+".yaml")
		r.logPath = filepath.Join(dir, r.name+".log")
		cfg := fmt.Sprintf(`database_url: %q
listen: 127.0.0.1:%d
log: {level: info, format: json}
executors:
  access_token: %q
scheduler:
  node_id: %s
  lock_partitions: 3
%s`, c.db.url(), r.port, execToken, r.name, o.Scheduler)
		require.NoError(t, os.WriteFile(r.cfg, []byte(cfg), 0o600))
		c.replicas = append(c.replicas, r)
	}
	t.Cleanup(func() {
		for _, r := range c.replicas {
			if r.running() {
				_ = r.cmd.Process.Signal(syscall.SIGCONT)
				_ = r.cmd.Process.Kill()
				<-r.exited
			}
		}
		c.exec.close()
	})
	c.exec.setAdmins(func() []string {
		var out []string
		for _, r := range c.replicas {
			out = append(out, r.base())
		}
		return out
	})
	for i, r := range c.replicas {
		c.start(r)
		if i == 0 {
			c.setup()
		}
	}
	return c
}

func (c *cluster) start(r *replica) {
	c.t.Helper()
	logf, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	require.NoError(c.t, err)
	r.cmd = exec.Command(c.bin, "server", "--config", r.cfg)
	r.cmd.Env = append(os.Environ(), "RINGJOB_ADMIN_TOKEN="+adminToken)
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(c.t, r.cmd.Start())
	r.exited = make(chan struct{})
	r.paused = false
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); logf.Close(); close(done) }(r.cmd, r.exited)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(r.base() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) || !r.running() {
			log, _ := os.ReadFile(r.logPath)
			c.t.Fatalf("replica %s did not become ready:\n%s", r.name, lastLines(string(log), 30))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *cluster) signal(r *replica, sig syscall.Signal) {
	c.t.Helper()
	require.NoError(c.t, r.cmd.Process.Signal(sig))
	switch sig {
	case syscall.SIGSTOP:
		r.paused = true
	case syscall.SIGCONT:
		r.paused = false
	case syscall.SIGKILL, syscall.SIGTERM:
		select {
		case <-r.exited:
		case <-time.After(60 * time.Second):
			c.t.Fatalf("replica %s did not exit after %v", r.name, sig)
		}
	}
}

// call sends an API request to the first running, unpaused replica.
func (c *cluster) call(method, path string, body any) (int, map[string]any) {
	c.t.Helper()
	for _, r := range c.replicas {
		if !r.running() || r.paused {
			continue
		}
		code, out, err := send(http.DefaultClient, r.base(), method, path, body, nil)
		require.NoError(c.t, err)
		return code, out
	}
	c.t.Fatal("no replica to call")
	return 0, nil
}

// send sends an API request to the replica at base, with headers.
func send(client *http.Client, base, method, path string, body any, headers map[string]string) (int, map[string]any, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, fmt.Errorf("encode the body of %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out, nil
}

// setup creates the executor's group and the every-second jobs.
func (c *cluster) setup() {
	c.t.Helper()
	code, g := c.call("POST", "/api/v1/groups", map[string]any{"app_name": "faults", "title": "Fault injection",
		"members": []string{c.exec.url()}})
	require.Equal(c.t, 201, code, "%v", g)
	c.group = int64(g["id"].(float64))
	for i := 0; i < c.jobs; i++ {
		spec := map[string]any{"group_id": g["id"], "name": fmt.Sprintf("every-second-%d", i),
			"schedule_type": "cron", "schedule_conf": "* * * * * ?", "time_zone": "UTC", "handler": "record", "enabled": true,
			"misfire_policy": "do_nothing", "route_strategy": "first", "timeout_sec": 30}
		if c.jobSpec != nil {
			c.jobSpec(i, spec)
		}
		code, j := c.call("POST", "/api/v1/jobs", spec)
		require.Equal(c.t, 201, code, "%v", j)
	}
}

// logs is what a replica logged.
func (r *replica) logs() string {
	b, _ := os.ReadFile(r.logPath)
	return string(b)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
