package main

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
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

// replica is a ringjob server process with its JSON log lines kept.
type replica struct {
	*server
	logMu  sync.Mutex
	logs   []map[string]any
	raw    []string
	stderr syncBuf
}

// syncBuf is a buffer safe for the process writer and the test reading it.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (r *replica) logLines(msg string) []map[string]any {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	var out []map[string]any
	for _, l := range r.logs {
		if l["msg"] == msg {
			out = append(out, l)
		}
	}
	return out
}

// startReplica starts `ringjob server` with cfg (YAML; listen and log are
// added) and env, and waits until it is ready.
func startReplica(t *testing.T, cfg string, scheme string, client *http.Client, env ...string) *replica {
	t.Helper()
	port := freePort(t)
	dir := t.TempDir()
	cfg = fmt.Sprintf("listen: 127.0.0.1:%d\nlog: {level: info, format: json}\n", port) + cfg
	cfgPath := filepath.Join(dir, "ringjob.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o600))
	r := &replica{server: &server{t: t, base: fmt.Sprintf("%s://127.0.0.1:%d", scheme, port), exited: make(chan error, 1)}}
	r.cmd = exec.Command(ringjobBinary(t), "server", "--config", cfgPath)
	r.cmd.Env = append(os.Environ(), env...)
	// JSON logs are on stdout, alone; stderr stays empty.
	stdout, err := r.cmd.StdoutPipe()
	require.NoError(t, err)
	r.cmd.Stderr = &r.stderr
	require.NoError(t, r.cmd.Start())
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			line := sc.Text()
			_, _ = lockedWriter{r.server}.Write([]byte(line + "\n"))
			_ = json.Unmarshal([]byte(line), &m)
			r.logMu.Lock()
			r.raw = append(r.raw, line)
			if m != nil {
				r.logs = append(r.logs, m)
			}
			r.logMu.Unlock()
		}
	}()
	go func() { r.exited <- r.cmd.Wait() }()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill()
		}
	})
	require.Eventually(t, func() bool {
		resp, err := client.Get(r.base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}, 60*time.Second, 50*time.Millisecond, "server never became ready; stdout:\n%s", r.output())
	return r
}

// checkJSONLogs: every stdout line is a JSON object with a millisecond UTC
// timestamp, a level and a message, and nothing is written to stderr.
func (r *replica) checkJSONLogs(t *testing.T) {
	t.Helper()
	require.Empty(t, r.stderr.String(), "stderr of a server logging JSON")
	r.logMu.Lock()
	defer r.logMu.Unlock()
	require.NotEmpty(t, r.raw)
	ts := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
	for _, l := range r.raw {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), "log line is not JSON: %q", l)
		require.Regexp(t, ts, m["time"], "timestamp of %q", l)
		require.NotEmpty(t, m["level"])
		require.NotEmpty(t, m["msg"])
	}
}

// runState reads a run through the API.
func runState(s *server, id int64) map[string]any {
	_, r := s.call("GET", fmt.Sprintf("/api/v1/runs/%d", id), nil, nil)
	return r
}

// TestRollingStop: SIGTERM on a replica (what a rolling deploy sends) lets a
// local process that ends within the stop grace finish and succeed; one
// that does not is ended, recorded lost, and retried by the job's policy on
// the replica that stays. API writes and final failures are logged with
// their principal and run, as JSON with millisecond timestamps.
func TestRollingStop(t *testing.T) {
	t.Parallel()
	dbURL := mysqlURL(t, dbtest.MySQL(t))
	token := "deploy-test-admin-token-0123456789abcdef"
	mark := filepath.Join(t.TempDir(), "first-attempt-ran")
	cfg := func(node string) string {
		return fmt.Sprintf(`database_url: %q
scheduler: {node_id: %s, stop_grace: 6s, followup_interval: 200ms}
local:
  kill_grace: 1s
  commands:
    - name: quick
      argv: ["/bin/sh", "-c", "echo started; sleep 4; echo quick done"]
    - name: slow
      argv: ["/bin/sh", "-c", "if [ -e \"$MARK\" ]; then echo second attempt; exit 0; fi; touch \"$MARK\"; echo first attempt; exec sleep 120"]
      env: {MARK: %q}
    - name: fail
      argv: ["/bin/sh", "-c", "echo boom >&2; exit 3"]
`, dbURL, node, mark)
	}
	env := "RINGJOB_ADMIN_TOKEN=" + token
	a := startReplica(t, cfg("replica-a"), "http", http.DefaultClient, env)
	a.token = token
	b := startReplica(t, cfg("replica-b"), "http", http.DefaultClient, env)
	b.token = token

	job := func(name string, retries int) int64 {
		code, g := a.call("POST", "/api/v1/groups", map[string]any{"app_name": "deploy-" + name, "title": name, "members": []string{"local://" + name}}, nil)
		require.Equal(t, 201, code, "%v", g)
		code, j := a.call("POST", "/api/v1/jobs", map[string]any{"group_id": num(g["id"]), "name": name, "retry_count": retries, "retry_delay_sec": 0}, nil)
		require.Equal(t, 201, code, "%v", j)
		return num(j["id"])
	}
	quickJob, slowJob, failJob := job("quick", 0), job("slow", 1), job("fail", 0)

	trigger := func(s *server, jobID int64) int64 {
		code, r := s.call("POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", jobID), map[string]any{}, nil)
		require.Equal(t, 201, code, "%v", r)
		return num(r["id"])
	}
	quick, slow := trigger(a.server, quickJob), trigger(a.server, slowJob)
	for _, id := range []int64{quick, slow} {
		require.Eventually(t, func() bool {
			r := runState(b.server, id)
			return r["state"] == "running" && r["node"] == "replica-a"
		}, 20*time.Second, 50*time.Millisecond, "run %d never ran on replica-a: %v", id, runState(b.server, id))
	}

	// The rolling deploy stops replica A.
	stopped := time.Now()
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-a.exited:
		require.NoError(t, err, "replica A exits cleanly")
	case <-time.After(30 * time.Second):
		t.Fatal("replica A did not stop within 30 s of SIGTERM")
	}
	took := time.Since(stopped)
	require.Less(t, took, 6*time.Second+1*time.Second+10*time.Second, "stop took %s: stop grace 6s + kill grace 1s + margin", took)
	require.GreaterOrEqual(t, took, 5*time.Second, "stop took %s: the slow process must get the whole stop grace", took)

	// The quick process finished inside the grace: a success.
	require.Equal(t, "succeeded", runState(b.server, quick)["state"], "%v", runState(b.server, quick))
	// The slow one was ended and recorded lost, not killed...
	sr := runState(b.server, slow)
	require.Equal(t, "lost", sr["state"], "%v", sr)
	require.Contains(t, sr["message"], "stop grace")
	// ...and its retry ran on replica B and succeeded there.
	var retry map[string]any
	require.Eventually(t, func() bool {
		_, page := b.call("GET", fmt.Sprintf("/api/v1/runs?job_id=%d", slowJob), nil, nil)
		items, _ := page["items"].([]any)
		for _, it := range items {
			m := it.(map[string]any)
			if num(m["retry_of"]) == slow && m["state"] == "succeeded" {
				retry = m
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "no successful retry of run %d", slow)
	require.Equal(t, "replica-b", retry["node"])
	code, lg := b.call("GET", fmt.Sprintf("/api/v1/runs/%d/log?from_line=1", num(retry["id"])), nil, nil)
	require.Equal(t, 200, code)
	require.Contains(t, lg["content"], "second attempt")
	require.Len(t, a.logLines("stop grace over: ending local processes still running; they are retried per their job's policy"), 1)

	// A final failure is a warning with its run id, on the replica that
	// followed it up.
	failed := trigger(b.server, failJob)
	require.Eventually(t, func() bool {
		for _, l := range b.logLines("run failed; no retry left") {
			if num(l["run_id"]) == failed {
				require.Equal(t, "warning", l["level"])
				return true
			}
		}
		return false
	}, 20*time.Second, 100*time.Millisecond, "final failure of run %d not logged", failed)

	// API writes: info lines with the principal and the run a trigger made.
	var sawTrigger bool
	for _, l := range a.logLines("api write") {
		require.Equal(t, "configured", l["principal"], "%v", l)
		if num(l["run_id"]) == slow {
			sawTrigger = true
		}
	}
	require.True(t, sawTrigger, "the trigger of run %d is not in replica A's log", slow)
	a.checkJSONLogs(t)
	b.stop()
	b.checkJSONLogs(t)
}

// TestNativeTLS: with tls.cert_file and tls.key_file (here from the
// environment) the server speaks HTTPS only.
func TestNativeTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	pool := writeCert(t, certFile, keyFile)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 5 * time.Second}
	s := startReplica(t, fmt.Sprintf("database_url: %q\n", "sqlite://"+dbtest.SQLitePath(t)), "https", client,
		"RINGJOB_TLS_CERT_FILE="+certFile, "RINGJOB_TLS_KEY_FILE="+keyFile)
	resp, err := client.Get(s.base + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	// The listener may answer before the start-up line is logged.
	var running []map[string]any
	require.Eventually(t, func() bool { running = s.logLines("ringjob is running"); return len(running) > 0 }, 10*time.Second, 50*time.Millisecond)
	require.Len(t, running, 1)
	require.Regexp(t, `^https://127\.0\.0\.1:\d+$`, running[0]["public_url"], "the public URL defaults to https")
	// Plain HTTP is not served.
	plain, err := net.DialTimeout("tcp", strings.TrimPrefix(s.base, "https://"), 5*time.Second)
	require.NoError(t, err)
	_, _ = plain.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
	_ = plain.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	n, _ := plain.Read(buf)
	plain.Close()
	require.False(t, bytes.HasPrefix(buf[:n], []byte("HTTP/1.1 200")), "plain HTTP answered: %q", buf[:n])
	s.stop()
	s.checkJSONLogs(t)
}

// writeCert writes a self-signed certificate for 127.0.0.1 and returns a
// pool that trusts it.
func writeCert(t *testing.T, certFile, keyFile string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ringjob-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}
