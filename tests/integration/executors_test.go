package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/api/xxlapi"
	"github.com/ringjob/ringjob/executor"
	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
	httptarget "github.com/ringjob/ringjob/targets/http"
	"github.com/ringjob/ringjob/targets/localexec"
)

func TestMain(m *testing.M) { dbtest.Main(m, dbtest.IgnoreFasthttp...) }

const execToken = "integration-executor-token-0123"

// server is an in-process Ringjob: store, scheduler, executor API on a real
// listener, and the HTTP target driver.
type server struct {
	t       *testing.T
	st      *store.Store
	sched   *scheduler.Scheduler
	svc     *service.Service
	ex      *service.Executors
	addr    string
	log     *logrus.Entry
	drivers *targets.Registry

	mu  sync.Mutex
	app *fiber.App
}

// serverOpt adjusts how startServer builds the scheduler and the service.
type serverOpt func(*scheduler.Options, *service.Options)

// eachServer runs fn as a parallel subtest per database server (MySQL/MariaDB,
// PostgreSQL), named after it.
func eachServer(t *testing.T, fn func(t *testing.T, dialect string)) {
	t.Helper()
	for _, dialect := range storetest.Servers {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			fn(t, dialect)
		})
	}
}

func startServer(t *testing.T, dialect string, opts ...serverOpt) *server {
	t.Helper()
	ctx := context.Background()
	st := storetest.Open(t, dialect)
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	log := logrus.NewEntry(l)
	drivers := targets.NewRegistry()
	so := scheduler.Options{Store: st, Drivers: drivers, Log: log, Config: scheduler.Config{StopGrace: 2 * time.Second}}
	svo := service.Options{Store: st, Drivers: drivers}
	for _, o := range opts {
		o(&so, &svo)
	}
	sched, err := scheduler.New(so)
	require.NoError(t, err)
	svo.Scheduler = sched
	ex := service.NewExecutors(service.ExecutorsOptions{Store: st, Sink: sched.Sink(), Drivers: drivers, Log: log})
	_, _, err = ex.EnsureToken(ctx, execToken)
	require.NoError(t, err)
	require.NoError(t, ex.EnsureRunSecret(ctx))
	d := httptarget.New(httptarget.Config{
		AccessToken: execToken,
		AuthFor: func(ctx context.Context, target string, jobID int64) (httptarget.Auth, error) {
			app, tok, v35, err := ex.AuthFor(ctx, target, jobID)
			return httptarget.Auth{AppName: app, AccessToken: tok, Protocol35: v35}, err
		},
		LogDateFor: func(ctx context.Context, runID int64) (time.Time, error) {
			r, err := st.RunGet(ctx, runID)
			return time.UnixMilli(r.ScheduledMs), err
		},
		RequestTimeout: 5 * time.Second,
	})
	drivers.Register("http", d)
	local, err := localexec.New(localexec.Config{KillGrace: time.Second, Commands: []localexec.Command{
		{Name: "env", Argv: []string{"/usr/bin/env"}},
		// Exits with the code given as params (operator-declared; params
		// arrive as an environment variable, never as shell code).
		{Name: "exit", Argv: []string{"/bin/sh", "-c", `exit "$RINGJOB_PARAMS"`}},
		// Shard 1 fails the first time (it leaves a marker file named by params).
		{Name: "flaky-shard", Argv: []string{"/bin/sh", "-c", `if [ "$RINGJOB_SHARD_INDEX" = 1 ] && [ ! -e "$RINGJOB_PARAMS" ]; then : > "$RINGJOB_PARAMS"; exit 1; fi`}},
		// Long enough that "running" is recorded before the run ends (accepts
		// are held up to 200 ms; a busy machine adds more): the block-strategy
		// tests wait for it.
		{Name: "nap", Argv: []string{"/bin/sleep", "1"}},
		{Name: "sleep30", Argv: []string{"/bin/sleep", "30"}},
		// Prints its params as its last stdout line (a workflow node's output).
		{Name: "echo-params", Argv: []string{"/bin/sh", "-c", `echo working; printf '%s\n' "$RINGJOB_PARAMS"`}},
	}}, sched.Sink(), log)
	require.NoError(t, err)
	t.Cleanup(func() { _ = local.Close(context.Background()) })
	drivers.Register("local", local)
	s := &server{t: t, st: st, sched: sched, ex: ex, log: log, drivers: drivers,
		svc: service.New(svo)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.addr = ln.Addr().String()
	s.serve(ln)
	require.NoError(t, sched.Start(ctx))
	t.Cleanup(func() { sched.Stop(context.Background()) })
	t.Cleanup(s.stopAPI)
	return s
}

func (s *server) url() string { return "http://" + s.addr }

func (s *server) serve(ln net.Listener) {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	xxlapi.Mount(app, s.ex, s.log)
	s.mu.Lock()
	s.app = app
	s.mu.Unlock()
	go func() { _ = app.Listener(ln) }()
}

// stopAPI takes the executor API down (the server "goes away").
func (s *server) stopAPI() {
	s.mu.Lock()
	app := s.app
	s.app = nil
	s.mu.Unlock()
	if app != nil {
		_ = app.ShutdownWithTimeout(2 * time.Second)
	}
}

// restartAPI brings the executor API back on the same address.
func (s *server) restartAPI() {
	var ln net.Listener
	var err error
	require.Eventually(s.t, func() bool {
		ln, err = net.Listen("tcp", s.addr)
		return err == nil
	}, 5*time.Second, 20*time.Millisecond)
	s.serve(ln)
}

func (s *server) group(app string) store.Group {
	g, err := s.st.GroupCreate(context.Background(), store.GroupCreateParams{AppName: app, GroupExecutorSettings: store.GroupExecutorSettings{AcceptRegistrations: true}, NowMs: time.Now().UnixMilli()})
	require.NoError(s.t, err)
	return g
}

func (s *server) job(g store.Group, handler string, block kind.Block, timeoutSec int) store.Job {
	j, err := s.st.JobCreate(context.Background(), store.JobCreateParams{JobFields: store.JobFields{GroupID: g.ID, Name: fmt.Sprintf("%s-%d", handler, time.Now().UnixNano()), ScheduleType: "none",
		TimeZone: "UTC", Handler: handler, BlockStrategy: block, TimeoutSec: timeoutSec, ShardCount: 1, RouteStrategy: "first"}, NowMs: time.Now().UnixMilli()})
	require.NoError(s.t, err)
	return j
}

func (s *server) trigger(j store.Job, params string) store.Run {
	r, _, err := s.sched.Trigger(context.Background(), scheduler.TriggerParams{JobID: j.ID, Params: &params})
	require.NoError(s.t, err)
	return r
}

// waitState waits until the run reaches one of the states.
func (s *server) waitState(id int64, states ...kind.RunState) store.Run {
	s.t.Helper()
	var r store.Run
	var err error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if r, err = s.st.RunGet(context.Background(), id); err != nil {
			continue
		}
		for _, st := range states {
			// A fast run can report its outcome a moment before the
			// dispatcher's batched write records where it ran.
			if r.State == st && (r.Target != "" || r.State == kind.RunFailed) {
				return r
			}
		}
	}
	s.t.Fatalf("run %d never reached %v within 20 s (last: %s %q, target %q, read error: %v)", id, states, r.State, r.Message, r.Target, err)
	return r
}

// startExecutor runs an SDK executor on a real socket, registered with the server.
func startExecutor(t *testing.T, s *server, app string, opts ...executor.Option) *executor.Executor {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	base := []executor.Option{executor.WithAdminAddresses(s.url()), executor.WithAccessToken(execToken), executor.WithAppName(app),
		executor.WithLogDir(t.TempDir()), executor.WithAddress("http://" + ln.Addr().String() + "/"), executor.WithShutdownGrace(200 * time.Millisecond)}
	e, err := executor.New(append(base, opts...)...)
	require.NoError(t, err)
	e.Register("hello", func(ctx context.Context, job *executor.Job) error {
		job.Log("hello line 1, params %s", job.Params)
		job.Log("hello line 2, shard %d of %d", job.ShardIndex, job.ShardTotal)
		return nil
	})
	e.Register("fail", func(ctx context.Context, job *executor.Job) error { return errors.New("boom: " + job.Params) })
	e.Register("sleep", func(ctx context.Context, job *executor.Job) error {
		d, _ := time.ParseDuration(job.Params)
		job.Log("sleeping %s", d)
		select {
		case <-ctx.Done():
			job.Log("stopped: %v", context.Cause(ctx))
			return context.Cause(ctx)
		case <-time.After(d):
			return nil
		}
	})
	e.Register("stubborn", func(ctx context.Context, job *executor.Job) error {
		time.Sleep(3 * time.Second) // ignores its context
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	want := "http://" + ln.Addr().String()
	require.Eventually(t, func() bool {
		live, err := s.ex.List(context.Background(), app, 90_000)
		for _, x := range live {
			if err == nil && x.Address == want {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "executor never registered")
	return e
}

func TestSDKExecutorEndToEnd(t *testing.T) {
	t.Parallel()
	eachServer(t, testSDKExecutorEndToEnd)
}

func testSDKExecutorEndToEnd(t *testing.T, dialect string) {
	s := startServer(t, dialect)
	g := s.group("demo")
	e := startExecutor(t, s, "demo")
	ctx := context.Background()

	t.Run("dispatch, callback, rolling log through the server", func(t *testing.T) {
		r := s.trigger(s.job(g, "hello", "SERIAL_EXECUTION", 0), "a; $(b)")
		r = s.waitState(r.ID, kind.RunSucceeded)
		require.Equal(t, strings.TrimRight(e.Address(), "/"), r.Target)
		log, err := s.svc.RunLog(ctx, r.ID, 1)
		require.NoError(t, err)
		require.Contains(t, log.Content, "hello line 1, params a; $(b)")
		require.Contains(t, log.Content, "hello line 2, shard 0 of 1")
		require.Greater(t, log.ToLine, 2)
		last, err := s.svc.RunLog(ctx, r.ID, log.ToLine)
		require.NoError(t, err)
		require.Equal(t, 1, strings.Count(last.Content, "\n"), "read from a line: only the last line, got %q", last.Content)
		require.Equal(t, log.ToLine, last.ToLine)
	})
	t.Run("failure carries the handler's error", func(t *testing.T) {
		r := s.waitState(s.trigger(s.job(g, "fail", "SERIAL_EXECUTION", 0), "x").ID, kind.RunFailed)
		require.Contains(t, r.Message, "boom: x")
		require.Equal(t, 500, r.ResultCode)
	})
	t.Run("serial execution queues", func(t *testing.T) {
		j := s.job(g, "sleep", "SERIAL_EXECUTION", 0)
		// The second is triggered once the first has reached the executor:
		// two runs triggered at once may be sent in either order, and the
		// executor queues them in the order they come.
		a := s.trigger(j, "300ms")
		s.waitState(a.ID, kind.RunRunning, kind.RunSucceeded)
		b := s.trigger(j, "10ms")
		ra, rb := s.waitState(a.ID, kind.RunSucceeded), s.waitState(b.ID, kind.RunSucceeded)
		require.LessOrEqual(t, ra.FinishedMs, rb.FinishedMs, "the second waits for the first")
	})
	t.Run("discard later rejects while running", func(t *testing.T) {
		j := s.job(g, "sleep", "DISCARD_LATER", 0)
		a := s.trigger(j, "2s")
		s.waitState(a.ID, kind.RunRunning)
		b := s.waitState(s.trigger(j, "10ms").ID, kind.RunFailed)
		require.Contains(t, b.Message, "Discard Later")
		s.waitState(a.ID, kind.RunSucceeded)
	})
	t.Run("cover early ends the running one, a failure as XXL-JOB records it", func(t *testing.T) {
		j := s.job(g, "sleep", "COVER_EARLY", 0)
		a := s.trigger(j, "10s")
		s.waitState(a.ID, kind.RunRunning)
		b := s.trigger(j, "10ms")
		// The executor reports code 500: no kill was asked of it, so the
		// run failed, whatever the message says.
		ra := s.waitState(a.ID, kind.RunFailed)
		require.Equal(t, 500, ra.ResultCode)
		require.Contains(t, ra.Message, "killed")
		s.waitState(b.ID, kind.RunSucceeded)
	})
	t.Run("timeout reports 502 while the handler ignores its context", func(t *testing.T) {
		r := s.waitState(s.trigger(s.job(g, "stubborn", "SERIAL_EXECUTION", 1), "").ID, kind.RunTimedOut)
		require.Equal(t, 502, r.ResultCode)
	})
	t.Run("kill from the server stops the handler", func(t *testing.T) {
		r := s.trigger(s.job(g, "sleep", "SERIAL_EXECUTION", 0), "30s")
		s.waitState(r.ID, kind.RunRunning)
		_, err := s.svc.KillRun(ctx, r.ID)
		require.NoError(t, err)
		got := s.waitState(r.ID, kind.RunKilled)
		require.Less(t, got.FinishedMs-got.DispatchedMs, int64(10_000), "stopped long before its 30 s")
		log, err := s.svc.RunLog(ctx, r.ID, 1)
		require.NoError(t, err)
		require.Contains(t, log.Content, "stopped:")
	})
}

func TestExecutorLeavesOnStop(t *testing.T) {
	t.Parallel()
	eachServer(t, testExecutorLeavesOnStop)
}

func testExecutorLeavesOnStop(t *testing.T, dialect string) {
	s := startServer(t, dialect)
	s.group("leaver")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	e, err := executor.New(executor.WithAdminAddresses(s.url()), executor.WithAccessToken(execToken), executor.WithAppName("leaver"),
		executor.WithLogDir(t.TempDir()), executor.WithShutdownGrace(100*time.Millisecond))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Serve(ctx, ln) }()
	require.Eventually(t, func() bool { l, _ := s.ex.List(context.Background(), "leaver", 90_000); return len(l) == 1 }, 10*time.Second, 10*time.Millisecond)
	cancel()
	<-done
	l, err := s.ex.List(context.Background(), "leaver", 90_000)
	require.NoError(t, err)
	require.Empty(t, l, "registryRemove on stop drops it at once")
}

func TestCallbacksRetriedAfterServerComesBack(t *testing.T) {
	t.Parallel()
	eachServer(t, testCallbacksRetriedAfterServerComesBack)
}

func testCallbacksRetriedAfterServerComesBack(t *testing.T, dialect string) {
	s := startServer(t, dialect)
	g := s.group("retry")
	clk := clockwork.NewRealClock()
	fake := clockwork.NewFakeClockAt(time.Now())
	_ = clk
	startExecutor(t, s, "retry", executor.WithClock(fake), executor.WithAdminTimeout(time.Second))
	j := s.job(g, "sleep", "SERIAL_EXECUTION", 0)
	r := s.trigger(j, "500ms")
	s.waitState(r.ID, kind.RunRunning)
	s.stopAPI() // the server's API goes away while the run finishes
	// The executor's callback fails against every admin and lands in its retry file.
	time.Sleep(1500 * time.Millisecond)
	got, err := s.st.RunGet(context.Background(), r.ID)
	require.NoError(t, err)
	require.Equal(t, kind.RunRunning, got.State, "no callback got through")
	s.restartAPI()
	// The retry loop runs every 30 s of the executor's clock.
	require.Eventually(t, func() bool {
		fake.Advance(executor.DefaultCallbackRetryInterval)
		got, err := s.st.RunGet(context.Background(), r.ID)
		return err == nil && got.State == kind.RunSucceeded
	}, 20*time.Second, 100*time.Millisecond, "callback resent after the server came back")
}

// rawExecutor speaks the protocol from the reference, without our SDK: it
// registers like a Java 2.x executor, accepts /run, and calls back with the
// 2.x array shape from its own goroutine.
type rawExecutor struct {
	t     *testing.T
	admin string
	srv   *http.Server
	addr  string
	wg    sync.WaitGroup
}

func (e *rawExecutor) post(path string, body any) map[string]any {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", e.admin+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json;charset=UTF-8")
	req.Header.Set("XXL-JOB-ACCESS-TOKEN", execToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	require.NoError(e.t, json.Unmarshal(raw, &out), "%s", raw)
	return out
}

func (e *rawExecutor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var tp map[string]any
	_ = json.NewDecoder(r.Body).Decode(&tp)
	w.Header().Set("Content-Type", "text/html;charset=UTF-8")
	if r.Header.Get("XXL-JOB-ACCESS-TOKEN") != execToken {
		fmt.Fprint(w, `{"code":500,"msg":"The access token is wrong."}`)
		return
	}
	if r.URL.Path == "/run" {
		logID := int64(tp["logId"].(float64))
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.post("/xxl-job-admin/api/callback", []map[string]any{{"logId": logID, "logDateTim": tp["logDateTime"], "handleCode": 200,
				"handleMsg": "raw executor ran " + tp["executorHandler"].(string) + " with " + tp["executorParams"].(string)}})
		}()
	}
	fmt.Fprint(w, `{"code":200,"msg":null,"content":null}`)
}

func TestRawExecutorRunsAJob(t *testing.T) {
	t.Parallel()
	eachServer(t, testRawExecutorRunsAJob)
}

func testRawExecutorRunsAJob(t *testing.T, dialect string) {
	s := startServer(t, dialect)
	g := s.group("xxl-job-executor-sample")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	e := &rawExecutor{t: t, admin: s.url(), addr: "http://" + ln.Addr().String() + "/"}
	e.srv = &http.Server{Handler: e}
	go func() { _ = e.srv.Serve(ln) }()
	defer func() { _ = e.srv.Close(); e.wg.Wait() }()
	out := e.post("/xxl-job-admin/api/registry", map[string]string{"registryGroup": "EXECUTOR", "registryKey": "xxl-job-executor-sample", "registryValue": e.addr})
	require.EqualValues(t, 200, out["code"], "%v", out)
	r := s.waitState(s.trigger(s.job(g, "demoJobHandler", "SERIAL_EXECUTION", 0), "p=1").ID, kind.RunSucceeded)
	require.Equal(t, "raw executor ran demoJobHandler with p=1", r.Message)
	require.Equal(t, strings.TrimRight(e.addr, "/"), r.Target)
}
