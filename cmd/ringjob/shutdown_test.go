package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/executor"
	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/lambdaemu"
	"github.com/ringjob/ringjob/internal/lambdaemu/emutest"
)

// TestShutdownRecordsEveryOutcome: SIGTERM on a replica (a rolling deploy)
// while 100 synchronous Lambda invocations (the emulator) and 50 local
// processes it started are in flight. Each of them ends inside the stop
// grace, and each outcome is recorded by the stopping replica before it
// exits: 150 runs succeeded, none left running, none retried, and each run
// invoked or started exactly once, counted at the emulator and by the
// processes themselves.
func TestShutdownRecordsEveryOutcome(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two servers, 100 function processes and 50 local processes")
	}
	t.Parallel()
	const lambdaRuns, localRuns = 100, 50

	fns, err := emutest.Build(t.TempDir())
	require.NoError(t, err)
	var invMu sync.Mutex
	invoked := map[int64]int{} // run id -> invocations the emulator ran
	emu, err := lambdaemu.New(lambdaemu.Options{Addr: "127.0.0.1:0", Functions: []lambdaemu.Function{
		{Name: "hello", Path: fns["hello"], Timeout: time.Minute, MaxConcurrency: lambdaRuns},
	}, OnInvoke: func(r lambdaemu.Record) {
		var trig struct {
			RunID int64 `json:"run_id"`
		}
		_ = json.Unmarshal(r.Payload, &trig)
		invMu.Lock()
		invoked[trig.RunID]++
		invMu.Unlock()
	}})
	require.NoError(t, err)
	require.NoError(t, emu.Start(context.Background()))
	t.Cleanup(func() { _ = emu.Close(context.Background()) })

	dbURL := mysqlURL(t, dbtest.MySQL(t))
	token := "shutdown-test-admin-token-0123456789abcdef"
	started := filepath.Join(t.TempDir(), "local-starts")
	cfg := func(node string) string {
		return fmt.Sprintf(`database_url: %q
scheduler: {node_id: %s, stop_grace: 25s, followup_interval: 200ms}
lambda: {endpoint: %q}
local:
  kill_grace: 1s
  commands:
    - name: work
      argv: ["/bin/sh", "-c", "echo \"$RINGJOB_RUN_ID\" >> \"$STARTS\"; sleep 4; echo done"]
      env: {STARTS: %q}
      max_concurrency: 100
`, dbURL, node, emu.URL(), started)
	}
	env := []string{"RINGJOB_ADMIN_TOKEN=" + token, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=us-east-1"}
	a := startReplica(t, cfg("replica-a"), "http", http.DefaultClient, env...)
	a.token = token
	b := startReplica(t, cfg("replica-b"), "http", http.DefaultClient, env...)
	b.token = token

	shardedJob := func(name, member, params string, shards int) int64 {
		code, g := a.call("POST", "/api/v1/groups", map[string]any{"app_name": "stop-" + name, "title": name, "members": []string{member}}, nil)
		require.Equal(t, 201, code, "%v", g)
		// One retry: a run recorded failed or lost by the stop would be run
		// again, which the counts below would show.
		code, j := a.call("POST", "/api/v1/jobs", map[string]any{"group_id": num(g["id"]), "name": name, "params": params,
			"route_strategy": "sharding", "shard_count": shards, "retry_count": 1, "retry_delay_sec": 0}, nil)
		require.Equal(t, 201, code, "%v", j)
		code, r := a.call("POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", num(j["id"])), map[string]any{}, nil)
		require.Equal(t, 201, code, "%v", r)
		return num(j["id"])
	}
	fnJob := shardedJob("fn", "lambda://us-east-1/hello", `{"name":"stop","sleep_ms":5000}`, lambdaRuns)
	localJob := shardedJob("local", "local://work", "", localRuns)

	runs := func(s *server, jobID int64) []map[string]any {
		code, page := s.call("GET", fmt.Sprintf("/api/v1/runs?job_id=%d&limit=500", jobID), nil, nil)
		require.Equal(t, 200, code, "%v", page)
		var out []map[string]any
		items, _ := page["items"].([]any)
		for _, it := range items {
			out = append(out, it.(map[string]any))
		}
		return out
	}
	inFlight := func(jobID int64, want int) bool {
		rs := runs(b.server, jobID)
		n := 0
		for _, r := range rs {
			if r["state"] == "running" && r["node"] == "replica-a" {
				n++
			}
		}
		return n == want
	}
	require.Eventually(t, func() bool { return inFlight(fnJob, lambdaRuns) && inFlight(localJob, localRuns) },
		30*time.Second, 50*time.Millisecond, "the runs never all ran on replica A")

	// The rolling deploy stops replica A while all 150 are in flight.
	stopped := time.Now()
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-a.exited:
		require.NoError(t, err, "replica A exits cleanly")
	case <-time.After(60 * time.Second):
		t.Fatal("replica A did not stop within 60 s of SIGTERM")
	}
	t.Logf("replica A stopped %s after SIGTERM", time.Since(stopped).Round(time.Millisecond))

	// Recorded by the time A has exited: every run final and succeeded, one
	// run per shard (no retry).
	for _, c := range []struct {
		job  int64
		want int
	}{{fnJob, lambdaRuns}, {localJob, localRuns}} {
		rs := runs(b.server, c.job)
		require.Len(t, rs, c.want, "runs of job %d (a retry would add one)", c.job)
		for _, r := range rs {
			require.Equal(t, "succeeded", r["state"], "run %v", r)
			require.Equal(t, "replica-a", r["node"], "run %v", r)
		}
	}

	// Counted at the targets: each run started exactly once.
	invMu.Lock()
	require.Len(t, invoked, lambdaRuns, "distinct runs the emulator invoked")
	for id, n := range invoked {
		require.Equal(t, 1, n, "run %d invoked %d times", id, n)
	}
	invMu.Unlock()
	raw, err := os.ReadFile(started)
	require.NoError(t, err)
	seen := map[string]int{}
	for _, l := range strings.Fields(string(raw)) {
		seen[l]++
	}
	require.Len(t, seen, localRuns, "distinct local runs started")
	for id, n := range seen {
		require.Equal(t, 1, n, "local run %s started %d times", id, n)
	}
	b.stop()
}

// TestShutdownRecordsLateExecutorCallbacks: SIGTERM on a replica while an
// XXL executor (our SDK, its only admin address that replica) runs 10 runs
// the replica sent, and a local process keeps the replica draining. The
// executor finishes its runs during the drain and calls back: the draining
// replica records every result before it exits (not ready, and refusing
// other API requests, meanwhile), so no run is left running and none runs
// again. (Before, the API stopped listening at the signal: the callbacks
// found the port closed, and an executor with no other admin address kept
// them for a retry, leaving the runs running.)
func TestShutdownRecordsLateExecutorCallbacks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two servers and an executor")
	}
	t.Parallel()
	const xxlRuns = 10
	dsn := dbtest.MySQL(t)
	dbURL := mysqlURL(t, dsn)
	token := "late-callback-test-admin-token-0123456789"
	execToken := "late-callback-test-executor-token-0123456789"
	cfg := func(node string) string {
		return fmt.Sprintf(`database_url: %q
scheduler: {node_id: %s, stop_grace: 25s, followup_interval: 200ms}
local:
  kill_grace: 1s
  commands:
    - name: work
      argv: ["/bin/sh", "-c", "sleep 6; echo done"]
`, dbURL, node)
	}
	env := []string{"RINGJOB_ADMIN_TOKEN=" + token, "RINGJOB_EXECUTOR_TOKEN=" + execToken}
	a := startReplica(t, cfg("replica-a"), "http", http.DefaultClient, env...)
	a.token = token
	b := startReplica(t, cfg("replica-b"), "http", http.DefaultClient, env...)
	b.token = token

	code, g := a.call("POST", "/api/v1/groups", map[string]any{"app_name": "late", "title": "late callbacks"}, nil)
	require.Equal(t, 201, code, "%v", g)
	code, j := a.call("POST", "/api/v1/jobs", map[string]any{"group_id": num(g["id"]), "name": "late", "handler": "wait",
		"schedule_type": "none", "retry_count": 1, "retry_delay_sec": 0}, nil)
	require.Equal(t, 201, code, "%v", j)
	xxlJob := num(j["id"])
	code, lg := a.call("POST", "/api/v1/groups", map[string]any{"app_name": "late-local", "title": "drain", "members": []string{"local://work"}}, nil)
	require.Equal(t, 201, code, "%v", lg)
	code, lj := a.call("POST", "/api/v1/jobs", map[string]any{"group_id": num(lg["id"]), "name": "drain", "schedule_type": "none"}, nil)
	require.Equal(t, 201, code, "%v", lj)
	localJob := num(lj["id"])

	// The executor: each run waits for release, then succeeds.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	release := make(chan struct{})
	var handledMu sync.Mutex
	handled := map[int64]int{} // run id -> times the handler ran it
	ex, err := executor.New(executor.WithAdminAddresses(a.base), executor.WithAccessToken(execToken), executor.WithAppName("late"),
		executor.WithLogDir(t.TempDir()), executor.WithAddress("http://"+ln.Addr().String()+"/"),
		executor.WithCallbackRetryInterval(time.Hour), executor.WithRegistryInterval(300*time.Millisecond), executor.WithShutdownGrace(time.Second))
	require.NoError(t, err)
	ex.Register("wait", func(ctx context.Context, job *executor.Job) error {
		handledMu.Lock()
		handled[job.LogID]++
		handledMu.Unlock()
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	ectx, cancelEx := context.WithCancel(context.Background())
	exDone := make(chan struct{})
	go func() { defer close(exDone); _ = ex.Serve(ectx, ln) }()
	t.Cleanup(func() { cancelEx(); <-exDone })

	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	defer db.Close()
	require.Eventually(t, func() bool {
		var n int
		return db.QueryRow("SELECT COUNT(*) FROM executor_registry WHERE app_name = 'late'").Scan(&n) == nil && n == 1
	}, 20*time.Second, 100*time.Millisecond, "the executor never registered")

	runs := func(s *server, jobID int64) []map[string]any {
		code, page := s.call("GET", fmt.Sprintf("/api/v1/runs?job_id=%d&limit=500", jobID), nil, nil)
		require.Equal(t, 200, code, "%v", page)
		var out []map[string]any
		items, _ := page["items"].([]any)
		for _, it := range items {
			out = append(out, it.(map[string]any))
		}
		return out
	}
	runningOnA := func(jobID int64, want int) bool {
		n := 0
		for _, r := range runs(b.server, jobID) {
			if r["state"] == "running" && r["node"] == "replica-a" {
				n++
			}
		}
		return n == want
	}
	// Ten runs of one job: the executor queues them (serial execution)
	// behind the first, which waits.
	for range xxlRuns {
		code, r := a.call("POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", xxlJob), map[string]any{}, nil)
		require.Equal(t, 201, code, "%v", r)
	}
	code, r := a.call("POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", localJob), map[string]any{}, nil)
	require.Equal(t, 201, code, "%v", r)
	require.Eventually(t, func() bool { return runningOnA(xxlJob, xxlRuns) && runningOnA(localJob, 1) },
		30*time.Second, 50*time.Millisecond, "the runs never all ran on replica A")

	// The rolling deploy stops A; its local process keeps it draining.
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	require.Eventually(t, func() bool { return strings.Contains(a.output(), "stopping: signal received") },
		5*time.Second, 20*time.Millisecond)
	time.Sleep(500 * time.Millisecond)
	select {
	case err := <-a.exited:
		t.Fatalf("replica A exited before its local run ended: %v", err)
	default:
	}
	// Draining: not ready, and no new work through its API.
	resp, err := http.Get(a.base + "/readyz")
	require.NoError(t, err, "a draining replica still answers")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "a draining replica is not ready")
	resp.Body.Close()
	code, _ = a.call("POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", xxlJob), map[string]any{}, nil)
	require.Equal(t, http.StatusServiceUnavailable, code, "a draining replica takes no new triggers")
	close(release) // the executor's runs end now, during A's drain, and it calls A back
	select {
	case err := <-a.exited:
		require.NoError(t, err, "replica A exits cleanly")
	case <-time.After(60 * time.Second):
		t.Fatal("replica A did not stop within 60 s of SIGTERM")
	}

	// Recorded by the time A has exited: every run final and succeeded, one
	// run per shard (a retry would add one), each handled once.
	rs := runs(b.server, xxlJob)
	require.Len(t, rs, xxlRuns, "runs of the executor's job")
	for _, r := range rs {
		require.Equal(t, "succeeded", r["state"], "run %v", r)
	}
	lr := runs(b.server, localJob)
	require.Len(t, lr, 1)
	require.Equal(t, "succeeded", lr[0]["state"], "local run %v", lr[0])
	handledMu.Lock()
	require.Len(t, handled, xxlRuns, "distinct runs the executor ran")
	for id, n := range handled {
		require.Equal(t, 1, n, "run %d ran %d times", id, n)
	}
	handledMu.Unlock()
	b.stop()
}
