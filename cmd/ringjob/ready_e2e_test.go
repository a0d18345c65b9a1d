package main

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/store"
)

// TestNotReadyUntilTheSchedulerRuns: the API listens before the scheduler
// has taken its locks (health answers), but /readyz says 503 until the
// replica schedules, so a load balancer or a rolling deploy does not count
// it early. The scheduler is held at its start by another session holding
// the node's liveness lock (a replica with the same node id still alive).
func TestNotReadyUntilTheSchedulerRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := dbtest.MySQL(t)
	st, err := store.OpenMySQL(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	const node = "held-at-start"
	lock, err := st.NodeLivenessAcquire(ctx, node)
	require.NoError(t, err)

	port := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	seen := make(chan string, 1)
	go func() {
		defer lock.Release(ctx)
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if code, body := httpGet(base + "/readyz"); code != 0 {
				health, _ := httpGet(base + "/healthz")
				seen <- strconv.Itoa(code) + " " + strconv.Itoa(health) + " " + body
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		seen <- "never answered"
	}()
	s := startServerWith(t, mysqlURL(t, dsn), "ready-admin-token-0123456789abcdefghij", port, "scheduler: {node_id: "+node+"}\n")
	got := <-seen
	require.Regexp(t, `^503 200 .*the scheduler is starting`, got, "while the scheduler waits for its lock: alive, not ready")
	code, body := httpGet(s.base + "/readyz")
	require.Equal(t, 200, code, body)
}

func httpGet(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
