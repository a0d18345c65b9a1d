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
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/targets"
	httptarget "github.com/ringjob/ringjob/targets/http"
)

// pyxxlExecutor answers a /kill the way pyxxl does: it cancels the task,
// reports its result through the admin callback first (and waits for the
// callback's answer), and only then answers the /kill. code and msg are
// what it reports (pyxxl: 500 CancelledError); killAnswer is its /kill
// answer (an XXL envelope; "" = code 200), killDelay how long it takes to
// give it after the callback was answered.
type pyxxlExecutor struct {
	admin      string
	code       int
	msg        string
	killAnswer string
	killDelay  time.Duration
	mu         sync.Mutex
	runs       map[int64]int64 // log id -> log date
	jobOf      map[int64]int64 // job id -> running log id
	kills      int
	// callbackTook is how long the admin took to answer the report.
	callbackTook time.Duration
}

func newPyxxl(admin string, code int, msg string) *pyxxlExecutor {
	return &pyxxlExecutor{admin: admin, code: code, msg: msg, runs: map[int64]int64{}, jobOf: map[int64]int64{}}
}

func (p *pyxxlExecutor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	answer := `{"code":200,"msg":null}`
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
			items, _ := json.Marshal([]xxlwire.CallbackItem{xxlwire.NewCallbackItem(logID, date, p.code, p.msg)})
			req, _ := http.NewRequest(http.MethodPost, p.admin+xxlwire.PathCallback, bytes.NewReader(items))
			req.Header.Set("Content-Type", xxlwire.RequestContentType)
			req.Header.Set(xxlwire.HeaderAccessToken, execToken)
			start := time.Now()
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			p.mu.Lock()
			p.callbackTook = time.Since(start)
			p.mu.Unlock()
		}
		time.Sleep(p.killDelay)
		if p.killAnswer != "" {
			answer = p.killAnswer
		}
	}
	_, _ = io.WriteString(w, answer)
}

func (p *pyxxlExecutor) stats() (kills int, callbackTook time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.kills, p.callbackTook
}

// An executor that reports the stopped run before it answers /kill (pyxxl)
// gets its run recorded killed at once, whatever it reports: no 5 s stall
// waiting for a kill that waits for the report, not failed nor succeeded,
// no retry, and one /kill. The report is answered at once and logged on
// the run.
func TestKillOfAnExecutorThatReportsBeforeAnswering(t *testing.T) {
	t.Parallel()
	eachServer(t, testKillOfAnExecutorThatReportsBeforeAnswering)
}

func testKillOfAnExecutorThatReportsBeforeAnswering(t *testing.T, dialect string) {
	s := startServer(t, dialect)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		code int
		msg  string
		was  kind.RunState
	}{
		{"pyxxl reports a failure", 500, "CancelledError", kind.RunFailed},
		{"a report of success", 200, "stopped", kind.RunSucceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPyxxl(s.url(), tc.code, tc.msg)
			srv := httptest.NewServer(p)
			t.Cleanup(srv.Close)
			j := s.outcomeJob(s.groupWith("pyxxl-"+strings.ReplaceAll(tc.name, " ", "-"), srv.URL), "pyxxl-job-"+tc.name, "sleep", 1)
			r := s.trigger(j, "")
			s.waitState(r.ID, kind.RunRunning)

			start := time.Now()
			k, err := s.svc.KillRun(ctx, r.ID)
			took := time.Since(start)
			require.NoError(t, err)
			require.Equal(t, kind.RunKilled, k.State, k.Message)
			require.Less(t, took, time.Second, "the kill settled without waiting for itself")
			kills, cb := p.stats()
			require.Less(t, cb, 500*time.Millisecond, "the report made during the kill was answered at once")
			s.waitLog(r.ID, fmt.Sprintf("ignored a later outcome from the executor callback: %s (code %d): %s", tc.was, tc.code, tc.msg), false)

			time.Sleep(2 * time.Second) // the follow-up services look at it
			got, err := s.st.RunGet(ctx, r.ID)
			require.NoError(t, err)
			require.Equal(t, kind.RunKilled, got.State, got.Message)
			require.Len(t, s.runsOf(j.ID), 1, "no retry of a killed run")
			require.Equal(t, 1, kills, "one /kill")
		})
	}
}

// A kill the executor refuses (the job was not running any more) after it
// reported the run's end: the report, held while the kill was in flight,
// is recorded as it came; the kill is a no-op, and a failure so reported
// is retried like any other.
func TestKillRefusedAfterAResultRecordsTheResult(t *testing.T) {
	eachServer(t, func(t *testing.T, dialect string) {
		s := startServer(t, dialect)
		ctx := context.Background()
		for _, tc := range []struct {
			name string
			code int
			want kind.RunState
			runs int // the run and its retries
		}{
			{"success", 200, kind.RunSucceeded, 1},
			{"failure", 500, kind.RunFailed, 2},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p := newPyxxl(s.url(), tc.code, "ended on its own")
				p.killAnswer = `{"code":500,"msg":"job thread is not running"}`
				srv := httptest.NewServer(p)
				t.Cleanup(srv.Close)
				j := s.outcomeJob(s.groupWith("refuses-"+tc.name, srv.URL), "refused-kill-"+tc.name, "sleep", 1)
				r := s.trigger(j, "")
				s.waitState(r.ID, kind.RunRunning)

				k, err := s.svc.KillRun(ctx, r.ID)
				require.NoError(t, err, "the run ended: the kill was a no-op")
				require.Equal(t, tc.want, k.State, k.Message)
				require.Equal(t, tc.code, k.ResultCode)
				require.Equal(t, "ended on its own", k.Message)
				require.Eventually(t, func() bool { return len(s.runsOf(j.ID)) == tc.runs }, 10*time.Second, 20*time.Millisecond,
					"a success is not retried, a failure is")
				time.Sleep(time.Second)
				require.Len(t, s.runsOf(j.ID), tc.runs)
				kills, _ := p.stats()
				require.Equal(t, 1, kills)
			})
		}
	})
}

// A kill is sent once: a second kill of the run while the first waits for
// its answer sends nothing and says why.
func TestKillIsSentOnce(t *testing.T) {
	eachServer(t, func(t *testing.T, dialect string) {
		s := startServer(t, dialect)
		ctx := context.Background()
		p := newPyxxl(s.url(), 500, "CancelledError")
		p.killDelay = 500 * time.Millisecond
		srv := httptest.NewServer(p)
		t.Cleanup(srv.Close)
		j := s.outcomeJob(s.groupWith("two-clicks", srv.URL), "two-clicks", "sleep", 1)
		r := s.trigger(j, "")
		s.waitState(r.ID, kind.RunRunning)

		first := make(chan error, 1)
		go func() {
			_, err := s.svc.KillRun(ctx, r.ID)
			first <- err
		}()
		require.Eventually(t, func() bool { k, _ := p.stats(); return k == 1 }, 5*time.Second, 5*time.Millisecond)
		_, err := s.svc.KillRun(ctx, r.ID)
		var conflict *service.ConflictError
		require.ErrorAs(t, err, &conflict)
		require.Contains(t, err.Error(), "already in flight")
		require.NoError(t, <-first)
		got, err := s.st.RunGet(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, kind.RunKilled, got.State)
		kills, _ := p.stats()
		require.Equal(t, 1, kills, "one /kill")
		_, err = s.svc.KillRun(ctx, r.ID)
		require.ErrorAs(t, err, &conflict, "a killed run has nothing left to kill")
		require.Contains(t, err.Error(), "already ended")
	})
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
	// The kill's own record names the run it was stopped with: the
	// executor's report of the stopped run, whenever it comes, is held
	// with the kill or comes after it, and is only logged.
	require.Contains(t, got.Message, fmt.Sprintf("killed with run %d", queued.ID), "the running run's record must say why it was killed")

	time.Sleep(2 * time.Second) // the executor's reports and the follow-up services
	for _, r := range s.runsOf(j.ID) {
		require.Equal(t, kind.RunKilled, r.State, "run %d: %s", r.ID, r.Message)
	}
	require.Len(t, s.runsOf(j.ID), 2, "no retry of a killed run")
}

// The kill is sent by the replica that serves it; the executor reports to
// another. The report is held in the database, where the sender's answer
// finds it: killed in under 1 s, one /kill, no retry.
func TestKillAndReportOnTwoReplicas(t *testing.T) {
	eachServer(t, func(t *testing.T, dialect string) {
		a := startServer(t, dialect) // takes the executor's report
		ctx := context.Background()
		regB := targets.NewRegistry()
		regB.Register("http", httptarget.New(httptarget.Config{
			AuthFor: func(ctx context.Context, target string, jobID int64) (httptarget.Auth, error) {
				app, tok, v35, err := a.ex.AuthFor(ctx, target, jobID)
				return httptarget.Auth{AppName: app, AccessToken: tok, Protocol35: v35}, err
			},
		}))
		svcB := service.New(service.Options{Store: a.st, Scheduler: a.sched, Drivers: regB})

		p := newPyxxl(a.url(), 200, "stopped")
		srv := httptest.NewServer(p)
		t.Cleanup(srv.Close)
		j := a.outcomeJob(a.groupWith("two-replicas", srv.URL), "two-replicas", "sleep", 1)
		r := a.trigger(j, "")
		a.waitState(r.ID, kind.RunRunning)

		start := time.Now()
		k, err := svcB.KillRun(ctx, r.ID)
		require.NoError(t, err)
		require.Less(t, time.Since(start), time.Second)
		require.Equal(t, kind.RunKilled, k.State, k.Message)
		a.waitLog(r.ID, "ignored a later outcome from the executor callback: succeeded (code 200): stopped", false)
		time.Sleep(2 * time.Second)
		require.Len(t, a.runsOf(j.ID), 1, "no retry of a killed run")
		kills, _ := p.stats()
		require.Equal(t, 1, kills)
	})
}
