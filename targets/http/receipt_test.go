package httptarget_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/executor"
	"github.com/ringjob/ringjob/targets"
	httptarget "github.com/ringjob/ringjob/targets/http"
)

// TestReceivedAsksTheExecutor: once a run's sender is dead, the driver asks
// our executor SDK (a real one on a socket) whether it received the run: a
// run it never received is "not held" (sent again, it runs once); a run it
// holds, queued behind a running one or running or finished, is "held".
// Sending a held run again is taken as accepted, and it runs once.
func TestReceivedAsksTheExecutor(t *testing.T) {
	t.Parallel()
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{"code":200,"msg":null}`)
	}))
	t.Cleanup(admin.Close)
	release := make(chan struct{})
	var mu sync.Mutex
	ran := map[int64]int{}
	e, err := executor.New(executor.WithAdminAddresses(admin.URL), executor.WithAccessToken("tok"), executor.WithAppName("receipts"),
		executor.WithLogDir(t.TempDir()), executor.WithAddress("http://127.0.0.1:1/"))
	require.NoError(t, err)
	e.Register("hold", func(ctx context.Context, job *executor.Job) error {
		mu.Lock()
		ran[job.LogID]++
		mu.Unlock()
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	require.NoError(t, e.Start(context.Background()))
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(func() {
		srv.Close()
		_ = e.Stop(context.Background())
	})
	d := httptarget.New(httptarget.Config{AccessToken: "tok"})
	ctx := context.Background()
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	ask := func(runID int64) targets.Receipt {
		t.Helper()
		r, err := d.Received(ctx, targets.ReceiptQuery{Target: srv.URL, RunID: runID, JobID: 7, ScheduledAt: at})
		require.NoError(t, err)
		return r
	}
	send := func(runID int64) string {
		t.Helper()
		res, err := d.Run(ctx, targets.Request{RunID: runID, JobID: 7, Target: srv.URL, Handler: "hold", ShardTotal: 1, ScheduledAt: at,
			BlockStrategy: "SERIAL_EXECUTION"})
		require.NoError(t, err)
		return res.Message
	}

	require.Equal(t, targets.ReceiptNotHeld, ask(101), "never received, the job idle")
	send(101)
	send(102) // queued behind 101 (serial execution)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return ran[101] == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, targets.ReceiptHeld, ask(101), "running")
	require.Equal(t, targets.ReceiptHeld, ask(102), "queued: the SDK answers for every run it received")
	require.Equal(t, targets.ReceiptUnknown, ask(103), "never received, but the job is busy: ask again later")
	require.Contains(t, send(102), "already received", "a held run sent again is not a failure")
	close(release)
	require.Eventually(t, func() bool { return ask(103) == targets.ReceiptNotHeld }, 5*time.Second, 10*time.Millisecond, "idle again")
	require.Equal(t, targets.ReceiptHeld, ask(101), "finished: its log is there")
	mu.Lock()
	require.Equal(t, map[int64]int{101: 1, 102: 1}, ran, "each run ran once")
	mu.Unlock()
}

// A Java executor (written from the protocol reference) answers /log for a
// log id it has no file of with "readLog fail, logFile not exists".
func TestReceivedOfAJavaExecutor(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	busy, logs := false, map[float64]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/idleBeat":
			if busy {
				_, _ = io.WriteString(w, `{"code":500,"msg":"job thread is running or has trigger queue."}`)
				return
			}
			_, _ = io.WriteString(w, `{"code":200,"msg":null}`)
		case "/log":
			if logs[body["logId"].(float64)] {
				_, _ = io.WriteString(w, `{"code":200,"msg":null,"content":{"fromLineNum":1,"toLineNum":2,"logContent":"start\nend\n","isEnd":false}}`)
				return
			}
			_, _ = io.WriteString(w, `{"code":200,"msg":null,"content":{"fromLineNum":1,"toLineNum":0,"logContent":"readLog fail, logFile not exists","isEnd":true}}`)
		default:
			_, _ = io.WriteString(w, `{"code":500,"msg":"unexpected"}`)
		}
	}))
	t.Cleanup(srv.Close)
	d := httptarget.New(httptarget.Config{})
	ask := func(runID int64) targets.Receipt {
		t.Helper()
		r, err := d.Received(context.Background(), targets.ReceiptQuery{Target: srv.URL, RunID: runID, JobID: 7, ScheduledAt: time.Now()})
		require.NoError(t, err)
		return r
	}
	mu.Lock()
	logs[5] = true
	mu.Unlock()
	require.Equal(t, targets.ReceiptHeld, ask(5))
	require.Equal(t, targets.ReceiptNotHeld, ask(6))
	mu.Lock()
	busy = true
	mu.Unlock()
	require.Equal(t, targets.ReceiptHeld, ask(5), "busy, but it has the run's log")
	require.Equal(t, targets.ReceiptUnknown, ask(6), "busy, no log: the run may be queued")
	srv.Close()
	_, err := d.Received(context.Background(), targets.ReceiptQuery{Target: srv.URL, RunID: 6, JobID: 7, ScheduledAt: time.Now()})
	require.Error(t, err, "an executor that does not answer is no answer")
}
