package faults_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/executor"
)

// sdkExecutor is an executor built with our executor SDK (executor/) on a
// socket: its handler "record" records every run it runs, and the SDK
// reports results to the replicas' callback API. The SDK remembers the run
// ids it received and answers /log for each, and refuses a run id it holds
// already.
type sdkExecutor struct {
	t        *testing.T
	port     int
	runDelay time.Duration
	dir      string

	mu       sync.Mutex
	arrivals []arrival
	e        *executor.Executor
	srv      *http.Server
}

func startSDKExecutor(t *testing.T, runDelay time.Duration) *sdkExecutor {
	t.Helper()
	return &sdkExecutor{t: t, port: freePort(t), runDelay: runDelay, dir: t.TempDir()}
}

func (s *sdkExecutor) url() string { return fmt.Sprintf("http://127.0.0.1:%d", s.port) }

// setAdmins builds the executor (its admin addresses are fixed at start)
// and serves it.
func (s *sdkExecutor) setAdmins(admins func() []string) {
	e, err := executor.New(executor.WithAdminAddresses(admins()...), executor.WithAccessToken(execToken),
		executor.WithAppName("faults-sdk"), executor.WithAddress(s.url()), executor.WithLogDir(s.dir),
		executor.WithCallbackRetryInterval(time.Second))
	require.NoError(s.t, err)
	e.Register("record", func(ctx context.Context, job *executor.Job) error {
		s.mu.Lock()
		s.arrivals = append(s.arrivals, arrival{job: job.JobID, logID: job.LogID, scheduledMs: job.LogDateTime.UnixMilli(), at: time.Now()})
		s.mu.Unlock()
		time.Sleep(s.runDelay)
		return nil
	})
	require.NoError(s.t, e.Start(context.Background()))
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", s.port))
	require.NoError(s.t, err)
	srv := &http.Server{Handler: e.Handler()}
	go func() { _ = srv.Serve(ln) }()
	s.mu.Lock()
	s.e, s.srv = e, srv
	s.mu.Unlock()
}

func (s *sdkExecutor) all() []arrival {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]arrival(nil), s.arrivals...)
}

// pendingCallbacks: the SDK retries its callbacks itself; settle waits on
// the ledger.
func (s *sdkExecutor) pendingCallbacks() int { return 0 }

func (s *sdkExecutor) down() { s.t.Fatal("the SDK executor is not taken down in these tests") }
func (s *sdkExecutor) up()   { s.t.Fatal("the SDK executor is not taken down in these tests") }

func (s *sdkExecutor) close() {
	s.mu.Lock()
	e, srv := s.e, s.srv
	s.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
	if e != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.Stop(ctx)
	}
}
