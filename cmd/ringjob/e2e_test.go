package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// ringjobBinary builds the real binary once per test process.
func ringjobBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ringjob-e2e-bin-*")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "ringjob")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// server is a running ringjob process.
type server struct {
	t      *testing.T
	cmd    *exec.Cmd
	base   string
	token  string
	mu     sync.Mutex
	stdout bytes.Buffer
	stderr bytes.Buffer
	exited chan error
}

// logs is what the server logged so far: JSON logs go to stdout, text logs
// to stderr.
func (s *server) logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String() + s.stdout.String()
}

func (s *server) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stdout.String()
}

type lockedWriter struct{ s *server }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.s.stdout.Write(p)
}

func startServer(t *testing.T, dbURL, token string) *server {
	t.Helper()
	return startServerWith(t, dbURL, token, freePort(t), "")
}

// startServerWith starts the binary on port with extra top-level YAML
// sections appended to the config (not local:, which is fixed here).
func startServerWith(t *testing.T, dbURL, token string, port int, extra string) *server {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`database_url: %q
listen: 127.0.0.1:%d
log: {level: info, format: json}
local:
  kill_grace: 1s
  commands:
    - name: hello
      argv: ["/bin/echo", "hello from e2e,"]
      params_arg: "params: {params}"
    - name: env
      argv: ["/usr/bin/env"]
      params_as_arg: true
    - name: nap
      argv: ["/bin/sleep", "3"]
    - name: longnap
      argv: ["/bin/sleep", "120"]
    - name: fail
      argv: ["/bin/sh", "-c", "echo failing; exit 3"]
    - name: talk
      argv: ["/bin/sh", "-c", "echo one; sleep 1; echo two"]
    - name: flaky
      argv: ["/bin/sh", "-c", "n=$(cat \"$RINGJOB_PARAMS\" 2>/dev/null || echo 0); echo \"attempt $n\"; echo $((n+1)) > \"$RINGJOB_PARAMS\"; [ \"$n\" -ge 2 ] || exit 4"]
`, dbURL, port) + extra
	cfgPath := filepath.Join(dir, "ringjob.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o600))
	s := &server{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port), exited: make(chan error, 1)}
	s.cmd = exec.Command(ringjobBinary(t), "server", "--config", cfgPath)
	s.cmd.Env = append(os.Environ(), "RINGJOB_ADMIN_TOKEN="+token)
	s.cmd.Stdout = lockedWriter{s}
	stderr, err := s.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, s.cmd.Start())
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Log("server: " + sc.Text())
			s.mu.Lock()
			s.stderr.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
		}
	}()
	go func() { s.exited <- s.cmd.Wait() }()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
		}
	})
	// Ready is /readyz answering 200 and this process saying it runs: the
	// port was free when freePort looked, but another package's server may
	// have taken it since, and its /readyz must not pass for this one's.
	require.Eventually(t, func() bool {
		select {
		case err := <-s.exited:
			s.exited <- err // for whoever waits for the exit; checked below
			return true
		default:
		}
		resp, err := http.Get(s.base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200 && strings.Contains(s.logs(), "is running")
	}, 30*time.Second, 50*time.Millisecond, "server never became ready; stdout:\n%s", s.output())
	select {
	case err := <-s.exited:
		s.exited <- err
		require.FailNow(t, "server exited before it was ready", "%v; its output:\n%s", err, s.logs())
	default:
	}
	s.token = token
	if token == "" {
		require.Eventually(t, func() bool {
			m := regexp.MustCompile(`\b(rj_[A-Za-z0-9_-]{20,})\b`).FindStringSubmatch(s.output())
			if m != nil {
				s.token = m[1]
			}
			return m != nil
		}, 5*time.Second, 20*time.Millisecond, "no generated token printed: %s", s.output())
	}
	return s
}

func (s *server) call(method, path string, body any, hdr map[string]string) (int, map[string]any) {
	s.t.Helper()
	return s.callAs(s.token, method, path, body, hdr)
}

// callAs is call with another API token (another principal).
func (s *server) callAs(token, method, path string, body any, hdr map[string]string) (int, map[string]any) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(s.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	require.NoError(s.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(raw) > 0 {
		require.NoError(s.t, json.Unmarshal(raw, &out), "body: %s", raw)
	}
	return resp.StatusCode, out
}

func (s *server) stop() {
	s.t.Helper()
	require.NoError(s.t, s.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-s.exited:
		require.NoError(s.t, err, "ringjob exits cleanly on SIGTERM")
	case <-time.After(30 * time.Second):
		s.t.Fatal("ringjob did not stop within 30 s of SIGTERM")
	}
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

func TestEndToEnd(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"sqlite", "mysql", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var dbURL, token string
			switch kind {
			case "sqlite":
				dbURL = "sqlite://" + dbtest.SQLitePath(t)
			case "mysql":
				dbURL = mysqlURL(t, dbtest.MySQL(t))
				token = "e2e-configured-admin-token-0123456789abcdef"
			default:
				dbURL = dbtest.Postgres(t)
				token = "e2e-configured-admin-token-0123456789abcdef"
			}
			s := startServer(t, dbURL, token)

			code, g := s.call("POST", "/api/v1/groups", map[string]any{"app_name": "e2e-tests", "title": "E2E", "members": []string{"local://hello"}}, nil)
			require.Equal(t, 201, code, "%v", g)
			code, j := s.call("POST", "/api/v1/jobs", map[string]any{"group_id": num(g["id"]), "name": "every-second",
				"schedule_type": "cron", "schedule_conf": "* * * * * ?", "time_zone": "UTC", "params": "it's $(id); `x` | y", "enabled": true}, nil)
			require.Equal(t, 201, code, "%v", j)
			jobID := num(j["id"])

			// Cron runs succeed with their output in the run log.
			var runs []any
			require.Eventually(t, func() bool {
				_, page := s.call("GET", fmt.Sprintf("/api/v1/runs?job_id=%d&state=succeeded", jobID), nil, nil)
				runs, _ = page["items"].([]any)
				return len(runs) >= 2
			}, 20*time.Second, 100*time.Millisecond)
			runID := num(runs[0].(map[string]any)["id"])
			code, lg := s.call("GET", fmt.Sprintf("/api/v1/runs/%d/log?from_line=1", runID), nil, nil)
			require.Equal(t, 200, code)
			require.Contains(t, lg["content"], "hello from e2e, params: it's $(id); `x` | y")

			// Preview of fire times.
			code, pv := s.call("POST", "/api/v1/next-fires", map[string]any{"schedule_type": "cron", "schedule_conf": "0 30 2 * * ?", "time_zone": "Europe/Berlin", "n": 5}, nil)
			require.Equal(t, 200, code, "%v", pv)
			require.Len(t, pv["items"], 5)

			// Two manual triggers with one Idempotency-Key: one run.
			hdr := map[string]string{"Idempotency-Key": "e2e-key-1"}
			code, r1 := s.call("POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", jobID), map[string]any{"params": "manual"}, hdr)
			require.Equal(t, 201, code, "%v", r1)
			code, r2 := s.call("POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", jobID), map[string]any{"params": "manual"}, hdr)
			require.Equal(t, 200, code, "%v", r2)
			require.Equal(t, num(r1["id"]), num(r2["id"]))
			_, page := s.call("GET", fmt.Sprintf("/api/v1/runs?job_id=%d&trigger_type=manual", jobID), nil, nil)
			require.Len(t, page["items"], 1)

			// Wrong token.
			req, _ := http.NewRequest("GET", s.base+"/api/v1/jobs", nil)
			req.Header.Set("Authorization", "Bearer wrong")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, 401, resp.StatusCode)

			// Metrics.
			resp, err = http.Get(s.base + "/metrics")
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			m := regexp.MustCompile(`(?m)^ringjob_fires_dispatched_total (\d+)`).FindStringSubmatch(string(body))
			require.NotNil(t, m, "metrics:\n%s", body)
			require.NotEqual(t, "0", m[1])
			require.Contains(t, string(body), "ringjob_dispatch_lag_seconds_bucket")
			require.Contains(t, string(body), `ringjob_run_outcomes_total{state="succeeded"}`)

			s.stop()
		})
	}
}

// mysqlURL turns a go-sql-driver DSN (user@tcp(host:port)/db?...) into the
// mysql:// URL the server takes.
func mysqlURL(t *testing.T, dsn string) string {
	t.Helper()
	m := regexp.MustCompile(`^([^:@]*)(?::([^@]*))?@tcp\(([^)]+)\)/([^?]+)`).FindStringSubmatch(dsn)
	require.NotNil(t, m, "unexpected dsn %q", dsn)
	u := url.URL{Scheme: "mysql", Host: m[3], Path: "/" + m[4]}
	if m[2] != "" {
		u.User = url.UserPassword(m[1], m[2])
	} else {
		u.User = url.User(m[1])
	}
	return strings.TrimSpace(u.String())
}
