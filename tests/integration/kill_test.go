package integration_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/targets"
	"github.com/ringjob/ringjob/targets/localexec"
)

// A kill sent to one replica stops a local process that runs on another.
func TestKillReachesTheReplicaThatRunsTheProcess(t *testing.T) {
	t.Parallel()
	eachServer(t, testKillReachesTheReplicaThatRunsTheProcess)
}

func testKillReachesTheReplicaThatRunsTheProcess(t *testing.T, dialect string) {
	a := startServer(t, dialect) // runs the process
	ctx := context.Background()

	// Replica B: same database, its own scheduler and local driver, and the
	// service the operator's kill request reaches.
	regB := targets.NewRegistry()
	schedB, err := scheduler.New(scheduler.Options{Store: a.st, Drivers: regB, Log: a.log, Config: scheduler.Config{NodeID: "replica-b", StopGrace: 2 * time.Second}})
	require.NoError(t, err)
	localB, err := localexec.New(localexec.Config{KillGrace: time.Second, Commands: []localexec.Command{{Name: "sleep30", Argv: []string{"/bin/sleep", "30"}}}}, schedB.Sink(), a.log)
	require.NoError(t, err)
	defer localB.Close(ctx)
	regB.Register("local", localB)
	require.NoError(t, schedB.Start(ctx))
	defer schedB.Stop(ctx)
	svcB := service.New(service.Options{Store: a.st, Scheduler: schedB, Drivers: regB})

	g := a.groupWith("kill-anywhere", "local://sleep30")
	r := a.trigger(a.routedJob(g, "", "first", 1), "") // dispatched by replica A
	running := a.waitState(r.ID, kind.RunRunning)
	require.NotEqual(t, "replica-b", running.Owner)

	_, err = svcB.KillRun(ctx, r.ID)
	require.NoError(t, err)
	killed := a.waitState(r.ID, kind.RunKilled)
	require.Less(t, killed.FinishedMs-killed.DispatchedMs, int64(10_000), "stopped long before its 30 s")
}
