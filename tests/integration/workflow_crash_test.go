package integration_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/wfcheck"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
	httptarget "github.com/ringjob/ringjob/targets/http"
)

// Two replicas are SIGKILLed and restarted at random moments while 100
// workflow runs of 5 nodes (a fan-out, a failing node retried once, a
// fan-in on all_finished, a failure branch) go through them. Wherever the
// kills fell, every workflow run ends; every node attempt has exactly one
// run in the ledger, made with the attempt's key and recorded on it; no run
// of a workflow exists without its attempt; and the executor ran each run
// once, never twice (a run whose replica died while handing it over may not
// have reached it, and is then recorded lost and its node retried). The
// database is shared here and not restarted: tests/faults'
// TestFaultsWorkflows runs 200 workflows while replicas are SIGKILLed and
// SIGSTOPped and its own database is restarted. Run with `make test-crash`.
func TestCrashWorkflowsExactlyOncePerAttempt(t *testing.T) {
	if os.Getenv("RINGJOB_CRASH_TEST") == "" {
		t.Skip("the crash test takes a minute or two: make test-crash (RINGJOB_CRASH_TEST=1)")
	}
	ctx := context.Background()
	dsn := dbtest.MySQL(t)
	st, err := store.OpenMySQL(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	_, err = st.Migrate(ctx)
	require.NoError(t, err)

	reps := []*replica{{t: t, listen: freeAddr(t)}, {t: t, listen: freeAddr(t)}}
	var admins []string
	for i, r := range reps {
		r.spec = fmt.Sprintf("%s|wfcrash-%d|%s", dsn, i, r.listen)
		admins = append(admins, "http://"+r.listen)
		r.start()
	}
	t.Cleanup(func() {
		for _, r := range reps {
			_ = r.cmd.Process.Signal(syscall.SIGKILL)
			_ = r.cmd.Wait()
		}
	})
	_, bin := binaries(t)
	cmd := exec.Command(bin, "-admin", strings.Join(admins, ","), "-token", execToken)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var line [128]byte
	n, err := out.Read(line[:])
	require.NoError(t, err)
	execAddr, ok := strings.CutPrefix(strings.TrimSpace(string(line[:n])), "listening ")
	require.True(t, ok)

	reg := targets.NewRegistry()
	reg.Register("http", httptarget.New(httptarget.Config{}))
	svc := service.New(service.Options{Store: st, Drivers: reg})
	g, err := svc.CreateGroup(ctx, service.GroupCreateParams{AppName: "wfcrash", Members: []string{execAddr}})
	require.NoError(t, err)
	job := func(name, handler string) int64 {
		// A timeout: an executor's result can be lost for good (its
		// callbacks, retried for 10 s, all fell while replicas restarted),
		// and such a run is recorded lost a minute past its timeout; the
		// node's retry then runs it again.
		j, err := svc.CreateJob(ctx, service.JobCreateParams{JobSpec: service.JobSpec{GroupID: g.ID, Name: name, Handler: handler, TimeoutSec: 5}})
		require.NoError(t, err)
		return j.ID
	}
	def := wfcheck.Definition(func(node string, fails bool) int64 {
		if fails {
			return job(node, "oom")
		}
		return job(node, "ok")
	})
	const total = 100
	var wfRuns []int64
	trigger := func() {
		w, err := svc.CreateWorkflow(ctx, service.WorkflowSpec{GroupID: g.ID, Name: fmt.Sprintf("wf-%d", len(wfRuns)), Definition: def}, false)
		require.NoError(t, err)
		r, _, err := svc.TriggerWorkflow(ctx, w.ID, nil, "")
		require.NoError(t, err)
		wfRuns = append(wfRuns, r.ID)
	}

	// Trigger while replicas are killed and restarted at random moments.
	kills := 0
	for len(wfRuns) < total {
		for i := 0; i < 10 && len(wfRuns) < total; i++ {
			trigger()
		}
		time.Sleep(time.Duration(300+rand.IntN(900)) * time.Millisecond)
		r := reps[rand.IntN(len(reps))]
		r.kill()
		kills++
		r.start()
	}
	for i := 0; i < 15; i++ {
		time.Sleep(time.Duration(300+rand.IntN(900)) * time.Millisecond)
		r := reps[rand.IntN(len(reps))]
		r.kill()
		kills++
		r.start()
	}

	// Settle: every workflow run ended, nothing in flight; then the runs
	// against the executor's record (internal/wfcheck, which the fault
	// suite's workflow test shares).
	require.NoError(t, wfcheck.Settle(ctx, st, 4*time.Minute))
	executed := map[int64]int{}
	for _, s := range readStats(t, execAddr).Seen {
		executed[s.LogID]++
	}
	rep, err := wfcheck.Check(ctx, st, def, wfRuns, executed)
	require.NoError(t, err)
	t.Logf("%d SIGKILLs; %d workflow runs ended %v; %d node attempts made %d runs, each made once and run at most once at the executor; "+
		"%d lost without reaching the executor (their replica died as it handed them over); %d lost after they ran (their result never came)",
		kills, total, rep.States, rep.Attempts, rep.Runs, rep.Unsent, rep.LostAfterRun)
	require.NoError(t, rep.Err())
	require.Greater(t, rep.States[kind.WorkflowSucceeded], total/2)
}
