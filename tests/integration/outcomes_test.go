package integration_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/store"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// binaries builds the two executor programs once per test process: our SDK
// (cmd/demo-executor) and the Go-client look-alike (tests/integration/goexecutor).
func binaries(t *testing.T) (demo, goexec string) {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := exec.Command("mktemp", "-d").Output()
		if err != nil {
			buildErr = err
			return
		}
		buildDir = strings.TrimSpace(string(dir))
		for _, p := range []string{"github.com/ringjob/ringjob/cmd/demo-executor", "github.com/ringjob/ringjob/tests/integration/goexecutor"} {
			out, err := exec.Command("go", "build", "-o", buildDir+"/", p).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", p, err, out)
				return
			}
		}
	})
	require.NoError(t, buildErr)
	return filepath.Join(buildDir, "demo-executor"), filepath.Join(buildDir, "goexecutor")
}

// startProcess runs an executor program and stops it (SIGKILL) at the end.
func startProcess(t *testing.T, bin string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = "/"
	return cmd
}

// startGoExecutor runs the Go-client look-alike and returns its address.
func startGoExecutor(t *testing.T, s *server) string {
	t.Helper()
	_, bin := binaries(t)
	cmd := startProcess(t, bin, "-admin", s.url(), "-token", execToken)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	require.True(t, ok, "first line %q", line)
	return addr
}

// startDemoExecutor runs our SDK's demo executor, registered under app.
func startDemoExecutor(t *testing.T, s *server, app string) string {
	t.Helper()
	bin, _ := binaries(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	cmd := startProcess(t, bin, "-admin", s.url(), "-token", execToken, "-app", app, "-listen", addr,
		"-address", "http://"+addr+"/", "-log-dir", t.TempDir())
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.Eventually(t, func() bool {
		live, err := s.ex.List(context.Background(), app, 90_000)
		return err == nil && len(live) > 0
	}, 20*time.Second, 20*time.Millisecond, "demo executor never registered")
	return "http://" + addr
}

type goexecStats struct {
	Runs map[string]int `json:"runs"`
	Seen []struct {
		LogID   int64  `json:"logId"`
		JobID   int64  `json:"jobId"`
		Handler string `json:"handler"`
	} `json:"seen"`
	Kills     int `json:"kills"`
	Callbacks []struct {
		LogID      int64  `json:"logId"`
		HandleCode int    `json:"handleCode"`
		HandleMsg  string `json:"handleMsg"`
	} `json:"callbacks"`
}

func readStats(t *testing.T, addr string) goexecStats {
	t.Helper()
	resp, err := http.Get(addr + "/debug/stats")
	require.NoError(t, err)
	defer resp.Body.Close()
	var st goexecStats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	return st
}

// outcomeJob is a job with retries and a child job.
func (s *server) outcomeJob(g store.Group, name, handler string, retries int, children ...int64) store.Job {
	j, err := s.st.JobCreate(context.Background(), store.JobCreateParams{JobFields: store.JobFields{GroupID: g.ID, Name: name, ScheduleType: "none",
		TimeZone: "UTC", Handler: handler, RouteStrategy: kind.RouteFirst, BlockStrategy: kind.BlockSerial, ShardCount: 1, RetryCount: retries,
		ChildJobIDs: children}, NowMs: time.Now().UnixMilli()})
	require.NoError(s.t, err)
	return j
}

func (s *server) runsOf(jobID int64) []store.Run {
	rs, err := s.st.RunList(context.Background(), store.RunListParams{JobID: jobID, Limit: 100})
	require.NoError(s.t, err)
	return rs
}

// waitLog waits until the run's log contains want: the server's own log of
// the run (central), or, with fromTarget, the log read through the server
// from its target.
func (s *server) waitLog(runID int64, want string, fromTarget bool) {
	s.t.Helper()
	var last string
	require.Eventually(s.t, func() bool {
		read := func(ctx context.Context, id int64, from int) (string, error) {
			if fromTarget {
				c, err := s.svc.RunLog(ctx, id, from)
				return c.Content, err
			}
			c, err := s.st.RunLogRead(ctx, id, from)
			return c.Content, err
		}
		content, err := read(context.Background(), runID, 1)
		if err != nil {
			return false
		}
		last = content
		return strings.Contains(content, want)
	}, 20*time.Second, 20*time.Millisecond, "run %d log never said %q; last:\n%s", runID, want, last)
}

// A kill accepted by the executor makes the run killed at once: the Go
// client's 200 afterwards (and our SDK's report) is logged on the run, never
// applied, and the killed run gets no child and no retry.
func TestKillIsAnOutcomeNotAMessage(t *testing.T) {
	t.Parallel()
	eachServer(t, testKillIsAnOutcomeNotAMessage)
}

func testKillIsAnOutcomeNotAMessage(t *testing.T, dialect string) {
	s := startServer(t, dialect)
	ctx := context.Background()
	goAddr := startGoExecutor(t, s)
	gGo := s.groupWith("goclient", goAddr)
	gSDK := s.group("sdk-demo")
	startDemoExecutor(t, s, "sdk-demo")
	child := s.outcomeJob(s.groupWith("children", "local://env"), "child", "", 0)

	for _, tc := range []struct {
		name  string
		group store.Group
		// what the executor calls back after the kill
		lateCode int
	}{
		{"go client", gGo, 200},
		{"our SDK", gSDK, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := s.outcomeJob(tc.group, "parent-"+tc.name, "sleep", 1, child.ID)
			r := s.trigger(parent, "30s")
			s.waitState(r.ID, kind.RunRunning)
			k, err := s.svc.KillRun(ctx, r.ID)
			require.NoError(t, err)
			require.Equal(t, kind.RunKilled, k.State, "killed as soon as the executor accepted")

			// The executor's own report is only logged, whether it came
			// while the kill was in flight (held with it, then logged when
			// the kill was accepted) or after.
			ignored := fmt.Sprintf("ignored a later outcome from the executor callback: %s (code %d)",
				map[int]kind.RunState{200: kind.RunSucceeded, 500: kind.RunFailed}[tc.lateCode], tc.lateCode)
			s.waitLog(r.ID, ignored, false)
			got, err := s.st.RunGet(ctx, r.ID)
			require.NoError(t, err)
			require.Equal(t, kind.RunKilled, got.State)
			// The run's log is the executor's; what the server wrote on the
			// run comes with it.
			c, err := s.svc.RunLog(ctx, r.ID, 1)
			require.NoError(t, err)
			require.Contains(t, c.ServerLog, ignored)

			// A success of the same job afterwards triggers its child once;
			// by then the follow-up services have looked at the killed run.
			ok := s.waitState(s.trigger(parent, "10ms").ID, kind.RunSucceeded)
			require.Eventually(t, func() bool {
				for _, c := range s.runsOf(child.ID) {
					if c.IdempotencyKey == store.ParentRunKey(ok.ID) {
						return true
					}
				}
				return false
			}, 20*time.Second, 20*time.Millisecond, "the success's child never ran")
			for _, c := range s.runsOf(child.ID) {
				require.NotEqual(t, store.ParentRunKey(r.ID), c.IdempotencyKey, "no child for a killed run")
			}
			require.Len(t, s.runsOf(parent.ID), 2, "no retry for a killed run")
		})
	}
	st := readStats(t, goAddr)
	require.Equal(t, 1, st.Kills)
	require.Equal(t, 2, st.Runs["sleep"], "the killed run and the later success, nothing else")
}

// A failure is a failure whatever its message says, and is retried.
func TestFailureMessageSayingKilledIsRetried(t *testing.T) {
	t.Parallel()
	eachServer(t, testFailureMessageSayingKilledIsRetried)
}

func testFailureMessageSayingKilledIsRetried(t *testing.T, dialect string) {
	s := startServer(t, dialect)
	goAddr := startGoExecutor(t, s)
	g := s.groupWith("goclient-oom", goAddr)
	j := s.outcomeJob(g, "oom", "oom", 1)
	r := s.waitState(s.trigger(j, "").ID, kind.RunFailed)
	require.Equal(t, 500, r.ResultCode)
	require.Equal(t, "task panic:child process was killed by the OOM killer", r.Message)
	var retry store.Run
	require.Eventually(t, func() bool {
		for _, x := range s.runsOf(j.ID) {
			if x.RetryOf == r.ID && x.State.Final() {
				retry = x
				return true
			}
		}
		return false
	}, 20*time.Second, 20*time.Millisecond, "the failure was never retried")
	require.Equal(t, kind.RunFailed, retry.State)
	require.Equal(t, 1, retry.Attempt)
	require.Equal(t, 2, readStats(t, goAddr).Runs["oom"], "the first attempt and its one retry, counted at the executor")
}

// An executor that never says isEnd (the Java core) still gets end=true
// from the server once the run is final and the caller has its last line.
func TestLogEndIsComputedByTheServer(t *testing.T) {
	t.Parallel()
	eachServer(t, testLogEndIsComputedByTheServer)
}

func testLogEndIsComputedByTheServer(t *testing.T, dialect string) {
	s := startServer(t, dialect)
	ctx := context.Background()
	goAddr := startGoExecutor(t, s)
	g := s.groupWith("goclient-log", goAddr)
	running := s.trigger(s.outcomeJob(g, "long", "sleep", 0), "30s")
	s.waitState(running.ID, kind.RunRunning)
	s.waitLog(running.ID, "sleeping 30s", true)
	c, err := s.svc.RunLog(ctx, running.ID, 2)
	require.NoError(t, err)
	require.False(t, c.End, "a running run's log does not end, even with nothing new")

	r := s.waitState(s.trigger(s.outcomeJob(g, "ok", "ok", 0), "p").ID, kind.RunSucceeded)
	c, err = s.svc.RunLog(ctx, r.ID, 1)
	require.NoError(t, err)
	require.Equal(t, "line one\nline two, params p\n", c.Content)
	require.Equal(t, 2, c.ToLine)
	require.False(t, c.End, "the executor may still have lines: read on")
	c, err = s.svc.RunLog(ctx, r.ID, c.ToLine+1)
	require.NoError(t, err)
	require.Empty(t, c.Content)
	require.True(t, c.End, "final, and nothing after the last line read")
}
