package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
