package httptarget_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/targets"
	httptarget "github.com/ringjob/ringjob/targets/http"
)

// A burst of dispatches to one executor reuses a bounded set of keep-alive
// connections: the executor serves at most MaxConnsPerExecutor triggers at
// once, over far fewer connections than triggers, and every trigger arrives.
func TestConnectionsAreReusedAndBounded(t *testing.T) {
	t.Parallel()
	const limit, workers, perWorker = 4, 32, 25
	ex := &rawExecutor{t: t, token: "tok", dialect: "2.x"}
	var opened, inFlight, maxInFlight atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := maxInFlight.Load()
			if n <= m || maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(time.Millisecond) // requests overlap, as on a busy executor
		ex.ServeHTTP(w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	d := httptarget.New(httptarget.Config{AccessToken: "tok", MaxConnsPerExecutor: limit})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				runID := int64(w*perWorker + i + 1)
				_, err := d.Run(ctx, targets.Request{Target: srv.URL, RunID: runID, JobID: 7, Handler: "h", ScheduledAt: time.UnixMilli(1_000)})
				if err != nil {
					errs <- fmt.Errorf("run %d: %w", runID, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	ex.mu.Lock()
	got := len(ex.requests)
	ex.mu.Unlock()
	require.Equal(t, workers*perWorker, got, "every trigger reached the executor")
	require.LessOrEqual(t, maxInFlight.Load(), int64(limit), "triggers in flight at once stay within MaxConnsPerExecutor")
	require.Equal(t, int64(limit), maxInFlight.Load(), "and the pool is used in full")
	require.LessOrEqual(t, opened.Load(), int64(2*limit), "%d triggers went over %d connections: they are kept alive and reused", got, opened.Load())
}
