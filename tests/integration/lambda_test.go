package integration_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/lambdaemu"
	"github.com/ringjob/ringjob/internal/lambdaemu/emutest"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets/lambda"
)

var (
	fnOnce  sync.Once
	fnPaths map[string]string
	fnErr   error
)

// functions builds the example functions once per test process.
func functions(t *testing.T) map[string]string {
	t.Helper()
	fnOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ringjob-integration-fn-*")
		if err != nil {
			fnErr = err
			return
		}
		fnPaths, fnErr = emutest.Build(dir)
	})
	require.NoError(t, fnErr)
	return fnPaths
}

// withLambda starts the emulator with the example functions and plugs the
// lambda:// driver into the server, with Event callbacks to the server's own
// /api/callback and per-run tokens.
func withLambda(t *testing.T, s *server) {
	t.Helper()
	fns := functions(t)
	emu, err := lambdaemu.New(lambdaemu.Options{Addr: "127.0.0.1:0", Log: s.log, Functions: []lambdaemu.Function{
		{Name: "hello", Path: fns["hello"], Timeout: 10 * time.Second, MaxConcurrency: 4},
		{Name: "sharded", Path: fns["sharded"], Timeout: 10 * time.Second, MaxConcurrency: 20},
	}})
	require.NoError(t, err)
	require.NoError(t, emu.Start(context.Background()))
	t.Cleanup(func() { _ = emu.Close(context.Background()) })
	d, err := lambda.New(lambda.Config{Sink: s.sched.Sink(), Log: s.log, Endpoint: emu.URL(),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		CallbackURL: s.url() + "/api/callback", RunToken: s.ex.RunToken})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	s.drivers.Register("lambda", d)
}

func TestLambdaThroughTheServer(t *testing.T) {
	t.Parallel()
	eachServer(t, testLambdaThroughTheServer)
}

func testLambdaThroughTheServer(t *testing.T, dialect string) {
	s := startServer(t, dialect)
	withLambda(t, s)
	ctx := context.Background()

	t.Run("sync: result and log tail", func(t *testing.T) {
		g := s.groupWith("fn-sync", "lambda://us-east-1/hello")
		r := s.waitState(s.trigger(s.routedJob(g, "", "first", 1), "world").ID, kind.RunSucceeded)
		require.Contains(t, r.Message, "Hello, world!")
		log, err := s.svc.RunLog(ctx, r.ID, 1)
		require.NoError(t, err)
		require.Contains(t, log.Content, "params: world")
		require.Contains(t, log.Content, "REPORT RequestId:")
		// The server computes the end for a function's log too: final, and
		// nothing after the last line read.
		if !log.End {
			log, err = s.svc.RunLog(ctx, r.ID, log.ToLine+1)
			require.NoError(t, err)
			require.Empty(t, log.Content)
		}
		require.True(t, log.End, "a finished function run's log ends")
	})

	t.Run("event mode completes through the server's callback", func(t *testing.T) {
		g := s.groupWith("fn-event", "lambda://us-east-1/hello?mode=event")
		r := s.trigger(s.routedJob(g, "", "first", 1), "async")
		got := s.waitState(r.ID, kind.RunSucceeded)
		require.Equal(t, "lambda://us-east-1/hello?mode=event", got.Target)
	})

	t.Run("sharded fan-out of 20 invocations, indexes 0..19 once each", func(t *testing.T) {
		g := s.groupWith("fn-shards", "lambda://us-east-1/sharded")
		first := s.trigger(s.routedJob(g, "", "sharding", 20), `{"from":0,"to":1000}`)
		var runs []store.Run
		require.Eventually(t, func() bool {
			runs, _ = s.st.RunList(ctx, store.RunListParams{JobID: first.JobID, States: []kind.RunState{kind.RunSucceeded}, Limit: 50})
			return len(runs) == 20
		}, 30*time.Second, 20*time.Millisecond)
		seen := map[int]bool{}
		for _, r := range runs {
			require.Equal(t, 20, r.ShardTotal)
			require.False(t, seen[r.ShardIndex], "index %d twice", r.ShardIndex)
			seen[r.ShardIndex] = true
			var res map[string]any
			require.NoError(t, json.Unmarshal([]byte(r.Message), &res), r.Message)
		}
		require.Len(t, seen, 20)
	})

	t.Run("failover from a wrong function name to an HTTP executor", func(t *testing.T) {
		g := s.group("fn-failover") // executors register only into a group that exists
		e := startExecutor(t, s, "fn-failover")
		httpTarget := strings.TrimRight(e.Address(), "/")
		// The executor registered in the group; as a static member listed
		// after the function (and no longer as a registered executor, which
		// would come first), it is where the failover lands.
		g, err := s.st.GroupUpdate(ctx, store.GroupUpdateParams{ID: g.ID, Members: []string{"lambda://us-east-1/no-such-function", httpTarget},
			GroupExecutorSettings: store.GroupExecutorSettings{AcceptRegistrations: false}, NowMs: time.Now().UnixMilli()})
		require.NoError(t, err)
		r := s.waitState(s.trigger(s.routedJob(g, "hello", "failover", 1), "p").ID, kind.RunSucceeded)
		require.Equal(t, httpTarget, r.Target)
		as := s.attempts(r.ID)
		require.NotEmpty(t, as)
		require.Equal(t, "lambda://us-east-1/no-such-function", as[0].Target)
		require.Contains(t, as[0].Error, "no-such-function")
	})
}

// Killing a function run through the server (the kill request an operator
// sends): the run is killed at once, for a synchronous invoke and for an
// Event one, and what the function reports afterwards is only logged: no
// retry, no child job, whatever the late report says.
func TestKillALambdaRunThroughTheServer(t *testing.T) {
	t.Parallel()
	eachServer(t, testKillALambdaRunThroughTheServer)
}

func testKillALambdaRunThroughTheServer(t *testing.T, dialect string) {
	s := startServer(t, dialect)
	withLambda(t, s)
	ctx := context.Background()
	child := s.outcomeJob(s.groupWith("fn-kill-children", "local://env"), "child", "", 0)
	for _, mode := range []string{"sync", "event"} {
		t.Run(mode, func(t *testing.T) {
			target := "lambda://us-east-1/hello"
			if mode == "event" {
				target += "?mode=event"
			}
			parent := s.outcomeJob(s.groupWith("fn-kill-"+mode, target), "parent-"+mode, "", 1, child.ID)
			r := s.trigger(parent, `{"name":"slow","sleep_ms":3000}`)
			s.waitState(r.ID, kind.RunRunning)
			k, err := s.svc.KillRun(ctx, r.ID)
			require.NoError(t, err)
			require.Equal(t, kind.RunKilled, k.State, "killed at once")
			// The kill request and the driver each report the kill (which
			// first depends on the mode); the second is only logged.
			s.waitLog(r.ID, "ignored a later outcome from the", false)
			if mode == "event" {
				// The function ends 3 s later and calls back its success:
				// logged on the run, not applied.
				s.waitLog(r.ID, "ignored a later outcome from the executor callback: succeeded (code 200)", false)
			}
			got, err := s.st.RunGet(ctx, r.ID)
			require.NoError(t, err)
			require.Equal(t, kind.RunKilled, got.State)

			// A success of the same job afterwards gets its child; by then
			// the follow-up services have looked at the killed run too.
			ok := s.waitState(s.trigger(parent, "quick").ID, kind.RunSucceeded)
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
}
