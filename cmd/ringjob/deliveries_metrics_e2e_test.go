package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scrape reads the samples of a real server's /metrics whose names start
// with prefix, keyed by name and labels as written there.
func scrape(t *testing.T, base, prefix string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(t, err, line)
		out[line[:i]] = v
	}
	require.NoError(t, sc.Err())
	return out
}

// TestFailureDeliveryMetrics: the failure-destination metrics a user
// watches on /metrics of a real server, while the destination (a webhook)
// is down and after it is back: the records owed are pending and each try
// refused is counted as failed; once it answers, every record is delivered
// once, pending drops to zero and the failures stop growing.
func TestFailureDeliveryMetrics(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	var mu sync.Mutex
	got := map[int64]int{} // run id -> records received
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if down.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		var rec struct {
			RunID   int64  `json:"run_id"`
			Outcome string `json:"outcome"`
		}
		if json.Unmarshal(body, &rec) != nil || rec.Outcome != "failed" {
			http.Error(w, "not a failure record", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got[rec.RunID]++
		mu.Unlock()
	}))
	defer sink.Close()

	token := "cli-dlq-token-0123456789abcdefghijklmnop"
	s := startServerWith(t, "sqlite://"+filepath.Join(t.TempDir(), "r.db"), token, freePort(t),
		"scheduler: {followup_interval: 200ms}\noutbound: {allowed_cidrs: [\"127.0.0.0/8\"]}\n")
	c := newCLI(t, s)
	c.env = append(c.env, "RINGJOB_URL="+s.base, "RINGJOB_TOKEN="+token)
	c.ok("groups", "create", "dead-letters", "--member", "local://fail")
	c.ok("jobs", "create", "dead-letters/fail", "--failure-destination", sink.URL+"/failures")

	const (
		failed    = `ringjob_failure_deliveries_total{result="failed"}`
		delivered = `ringjob_failure_deliveries_total{result="delivered"}`
		pending   = `ringjob_failure_deliveries_pending`
	)
	before := scrape(t, s.base, "ringjob_failure_deliveries")
	require.Zero(t, before[pending], "nothing owed at the start: %v", before)
	for i := 0; i < 3; i++ {
		require.Equal(t, 1, c.run("jobs", "trigger", "dead-letters/fail", "--wait").code)
	}

	// Down: three records owed, each try refused and counted.
	var m map[string]float64
	ok := assert.Eventually(t, func() bool {
		m = scrape(t, s.base, "ringjob_failure_deliveries")
		return m[pending] == 3 && m[failed] >= 3
	}, 20*time.Second, 100*time.Millisecond)
	require.True(t, ok, "while the destination is down: %v", m) // the last scrape, not the first
	require.Zero(t, m[delivered], "nothing delivered while down: %v", m)
	mu.Lock()
	require.Empty(t, got)
	mu.Unlock()

	// Back: each record delivered once, nothing pending, no new failure.
	down.Store(false)
	received := func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprint(got)
	}
	ok = assert.Eventually(t, func() bool {
		m = scrape(t, s.base, "ringjob_failure_deliveries")
		return m[pending] == 0 && m[delivered] == 3
	}, 60*time.Second, 200*time.Millisecond)
	require.True(t, ok, "after the destination came back: %v; records received by run: %s", m, received())
	failures := m[failed]
	mu.Lock()
	require.Len(t, got, 3, "one record per failed run: %v", got)
	for run, n := range got {
		require.Equal(t, 1, n, "run %d's record arrived once", run)
	}
	mu.Unlock()
	time.Sleep(600 * time.Millisecond) // three delivery ticks (followup_interval 200ms)
	m = scrape(t, s.base, "ringjob_failure_deliveries")
	require.Equal(t, failures, m[failed], "no try fails once everything is delivered")
	require.Equal(t, 3.0, m[delivered])
}
