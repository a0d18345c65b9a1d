package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/xxlwire"
)

// pyxxlExecutor answers a /kill the way pyxxl does: it cancels the task,
// reports its result through the admin callback first (and waits for the
// callback's answer), and only then answers the /kill.
type pyxxlExecutor struct {
	admin string
	mu    sync.Mutex
	runs  map[int64]int64 // log id -> log date
	jobOf map[int64]int64 // job id -> running log id
	kills int
}

func (p *pyxxlExecutor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	switch r.URL.Path {
	case xxlwire.PathRun:
		var tr xxlwire.TriggerRequest
		_ = json.Unmarshal(body, &tr)
		p.mu.Lock()
		p.runs[tr.LogID] = tr.LogDateTime
		p.jobOf[tr.JobID] = tr.LogID
		p.mu.Unlock()
	case xxlwire.PathKill:
		var q xxlwire.JobIDRequest
		_ = json.Unmarshal(body, &q)
		p.mu.Lock()
		p.kills++
		logID, ok := p.jobOf[q.JobID]
		delete(p.jobOf, q.JobID)
		date := p.runs[logID]
		p.mu.Unlock()
		if ok {
			items, _ := json.Marshal([]xxlwire.CallbackItem{xxlwire.NewCallbackItem(logID, date, 500, "CancelledError")})
			req, _ := http.NewRequest(http.MethodPost, p.admin+xxlwire.PathCallback, bytes.NewReader(items))
			req.Header.Set("Content-Type", xxlwire.RequestContentType)
			req.Header.Set(xxlwire.HeaderAccessToken, execToken)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	}
	_, _ = io.WriteString(w, `{"code":200,"msg":null}`)
}

// An executor that reports the stopped run before it answers /kill (pyxxl)
// gets its run recorded killed at once: no 5 s stall waiting for a kill
// that waits for the report, not failed, no retry, and one /kill.
func TestKillOfAnExecutorThatReportsBeforeAnswering(t *testing.T) {
	t.Parallel()
	eachServer(t, testKillOfAnExecutorThatReportsBeforeAnswering)
}

func testKillOfAnExecutorThatReportsBeforeAnswering(t *testing.T, dialect string) {
	s := startServer(t, dialect)
	ctx := context.Background()
	p := &pyxxlExecutor{admin: s.url(), runs: map[int64]int64{}, jobOf: map[int64]int64{}}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	j := s.outcomeJob(s.groupWith("pyxxl", srv.URL), "pyxxl-job", "sleep", 1)
	r := s.trigger(j, "")
	s.waitState(r.ID, kind.RunRunning)

	start := time.Now()
	k, err := s.svc.KillRun(ctx, r.ID)
	took := time.Since(start)
	require.NoError(t, err)
	require.Equal(t, kind.RunKilled, k.State)
	require.Less(t, took, time.Second, "the kill settled without waiting for itself")

	time.Sleep(2 * time.Second) // the follow-up services look at it
	got, err := s.st.RunGet(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, kind.RunKilled, got.State, got.Message)
	require.Len(t, s.runsOf(j.ID), 1, "no retry of a killed run")
	p.mu.Lock()
	require.Equal(t, 1, p.kills, "one /kill")
	p.mu.Unlock()
}

// XXL-JOB's /kill is per job: killing either of two runs of a
// serial-execution job on one executor (one running, one queued behind it)
// stops both. The service says so beforehand (KillScope), and both are
// recorded killed, neither failed, and neither retried.
func TestKillByJobStopsAndRecordsEveryRunOfTheJob(t *testing.T) {
	t.Parallel()
	eachServer(t, testKillByJobStopsAndRecordsEveryRunOfTheJob)
}

func testKillByJobStopsAndRecordsEveryRunOfTheJob(t *testing.T, dialect string) {
	s := startServer(t, dialect)
	ctx := context.Background()
	g := s.group("sdk-kill-scope")
	startDemoExecutor(t, s, "sdk-kill-scope")
	j := s.outcomeJob(g, "serial", "sleep", 1)
	first := s.trigger(j, "30s")
	s.waitState(first.ID, kind.RunRunning)
	queued := s.trigger(j, "30s")
	s.waitState(queued.ID, kind.RunRunning) // accepted: queued behind the first on the executor

	scope, err := s.svc.KillScope(ctx, queued.ID)
	require.NoError(t, err)
	require.Len(t, scope, 1)
	require.Equal(t, first.ID, scope[0].ID, "killing the queued run stops the running one too")
	scope, err = s.svc.KillScope(ctx, first.ID)
	require.NoError(t, err)
	require.Len(t, scope, 1)
	require.Equal(t, queued.ID, scope[0].ID)

	k, err := s.svc.KillRun(ctx, queued.ID)
	require.NoError(t, err)
	require.Equal(t, kind.RunKilled, k.State)
	got, err := s.st.RunGet(ctx, first.ID)
	require.NoError(t, err)
	require.Equal(t, kind.RunKilled, got.State, got.Message)
	// Either the kill's own record names the run it was stopped with, or
	// the executor's report of the stopped run came first (it reports as
	// soon as it has stopped the job) and is recorded as the kill's.
	withRun := strings.Contains(got.Message, fmt.Sprintf("killed with run %d", queued.ID))
	reported := strings.Contains(got.Message, "while the kill was in flight")
	require.True(t, withRun || reported, "the running run's record must say why it was killed: %q", got.Message)

	time.Sleep(2 * time.Second) // the executor's reports and the follow-up services
	for _, r := range s.runsOf(j.ID) {
		require.Equal(t, kind.RunKilled, r.State, "run %d: %s", r.ID, r.Message)
	}
	require.Len(t, s.runsOf(j.ID), 2, "no retry of a killed run")
}
