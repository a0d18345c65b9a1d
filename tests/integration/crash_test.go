package integration_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/api/xxlapi"
	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
	httptarget "github.com/ringjob/ringjob/targets/http"
)

// The crash test re-executes this test binary as a scheduler replica: the
// replica is a real process that the test SIGKILLs.
const replicaEnv = "RINGJOB_CRASH_REPLICA" // "dsn|node id|listen address"

func init() {
	if v := os.Getenv(replicaEnv); v != "" {
		os.Exit(runReplica(v))
	}
}

// runReplica runs a scheduler replica with its executor API until killed.
func runReplica(spec string) int {
	parts := strings.SplitN(spec, "|", 3)
	if len(parts) != 3 {
		fmt.Fprintln(os.Stderr, "replica: bad", replicaEnv)
		return 2
	}
	dsn, node, listen := parts[0], parts[1], parts[2]
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	log := logrus.NewEntry(l).WithField("node", node)
	st, err := openStore(ctx, dsn)
	if err != nil {
		log.WithError(err).Error("open store")
		return 1
	}
	drivers := targets.NewRegistry()
	sched, err := scheduler.New(scheduler.Options{Store: st, Drivers: drivers, Log: log,
		// A run handed over by a replica killed before it sent it seems
		// held by this executor (its log endpoint answers for any run, as
		// the XXL-JOB Go client's does: docs/reliability.md), so only the
		// lost-run check ends it. A short deadline lets it do so within
		// the settle time; the handlers return at once.
		Config: scheduler.Config{NodeID: node, StopGrace: time.Second, RunDeadline: 10 * time.Second, LostGrace: 2 * time.Second,
			LostCheckInterval: time.Second}})
	if err != nil {
		log.WithError(err).Error("scheduler")
		return 1
	}
	ex := service.NewExecutors(service.ExecutorsOptions{Store: st, Sink: sched.Sink(), Drivers: drivers, Log: log})
	if _, _, err := ex.EnsureToken(ctx, execToken); err != nil {
		log.WithError(err).Error("token")
		return 1
	}
	drivers.Register("http", httptarget.New(httptarget.Config{
		AccessToken: execToken,
		AuthFor: func(ctx context.Context, target string, jobID int64) (httptarget.Auth, error) {
			app, tok, v35, err := ex.AuthFor(ctx, target, jobID)
			return httptarget.Auth{AppName: app, AccessToken: tok, Protocol35: v35}, err
		},
		RequestTimeout: 5 * time.Second,
	}))
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		log.WithError(err).Error("listen")
		return 1
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	xxlapi.Mount(app, ex, log)
	go func() { _ = app.Listener(ln) }()
	if err := sched.Start(ctx); err != nil {
		log.WithError(err).Error("start")
		return 1
	}
	<-ctx.Done()
	sched.Stop(context.Background())
	return 0
}

type replica struct {
	t      *testing.T
	spec   string
	cmd    *exec.Cmd
	kills  int
	listen string
}

func (r *replica) start() {
	r.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), replicaEnv+"="+r.spec)
	cmd.Stderr = os.Stderr
	require.NoError(r.t, cmd.Start())
	r.cmd = cmd
}

func (r *replica) kill() {
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	_ = r.cmd.Wait()
	r.kills++
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// Two replicas are SIGKILLed and restarted at random moments while a job
// with a child succeeds and a job with one retry fails, every second.
// Wherever the kill fell (after the outcome was recorded and before its
// follow-up, in the middle of a follow-up, ...), every success of the parent
// made exactly one child run and every failure exactly one retry run, and
// the executor ran each once; the one exception allowed is a run whose
// replica died while handing it to the executor, which the scheduler records
// lost (delivery unknown) and does not re-send (the hand-off rule), so the
// executor may not have seen it. Run with `make test-crash`.
func TestCrashFollowupsExactlyOnce(t *testing.T) {
	if os.Getenv("RINGJOB_CRASH_TEST") == "" {
		t.Skip("the crash test takes a minute or two: make test-crash (RINGJOB_CRASH_TEST=1)")
	}
	eachServer(t, func(t *testing.T, dialect string) {
		dsn := dbtest.MySQL
		if dialect == "postgres" {
			dsn = dbtest.Postgres
		}
		crashFollowupsExactlyOnce(t, dsn(t))
	})
}

// openStore opens a MySQL DSN or a postgres:// URL.
func openStore(ctx context.Context, dsn string) (*store.Store, error) {
	if strings.HasPrefix(dsn, "postgres://") {
		return store.OpenPostgres(ctx, dsn)
	}
	return store.OpenMySQL(ctx, dsn)
}

func crashFollowupsExactlyOnce(t *testing.T, dsn string) {
	ctx := context.Background()
	st, err := openStore(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	_, err = st.Migrate(ctx)
	require.NoError(t, err)

	reps := []*replica{{t: t, listen: freeAddr(t)}, {t: t, listen: freeAddr(t)}}
	var admins []string
	for i, r := range reps {
		r.spec = fmt.Sprintf("%s|crash-%d|%s", dsn, i, r.listen)
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
	g, err := svc.CreateGroup(ctx, service.GroupCreateParams{AppName: "crash", Members: []string{execAddr}})
	require.NoError(t, err)
	child, err := svc.CreateJob(ctx, service.JobCreateParams{JobSpec: service.JobSpec{GroupID: g.ID, Name: "child", Handler: "child"}})
	require.NoError(t, err)
	every := func(name, handler string, retries int, children ...int64) store.Job {
		j, err := svc.CreateJob(ctx, service.JobCreateParams{Enabled: true, JobSpec: service.JobSpec{GroupID: g.ID, Name: name, Handler: handler,
			ScheduleType: "cron", ScheduleConf: "* * * * * ?", RetryCount: retries, ChildJobIDs: children}})
		require.NoError(t, err)
		return j
	}
	parent := every("parent", "ok", 0, child.ID)
	failing := every("failing", "oom", 1)

	// Kill and restart replicas at random moments.
	deadline := time.Now().Add(40 * time.Second)
	kills := 0
	for time.Now().Before(deadline) {
		time.Sleep(time.Duration(300+rand.IntN(900)) * time.Millisecond)
		r := reps[rand.IntN(len(reps))]
		r.kill()
		kills++
		r.start()
	}
	_, err = svc.StopJob(ctx, parent.ID)
	require.NoError(t, err)
	_, err = svc.StopJob(ctx, failing.ID)
	require.NoError(t, err)

	// Settle: nothing in flight, no follow-up pending.
	var unsettled []store.Run
	for settleBy := time.Now().Add(90 * time.Second); ; {
		rs, err := st.RunList(ctx, store.RunListParams{States: []kind.RunState{kind.RunScheduled, kind.RunDispatching, kind.RunRunning}, Limit: 10})
		require.NoError(t, err)
		pending, err := st.RunListFollowups(ctx, append([]kind.RunState{kind.RunSucceeded}, store.FailedStates...), 10)
		require.NoError(t, err)
		if unsettled = append(rs, pending...); len(unsettled) == 0 {
			break
		}
		if time.Now().After(settleBy) {
			for _, r := range unsettled {
				t.Logf("unsettled: run %d job %d %s owner %s scheduled %d handed %d: %s", r.ID, r.JobID, r.State, r.Owner, r.ScheduledMs, r.HandedMs, r.Message)
			}
			t.Fatalf("runs still in flight or follow-ups pending after 90 s")
		}
		time.Sleep(200 * time.Millisecond)
	}

	all := map[int64]store.Run{}
	for _, j := range []int64{parent.ID, child.ID, failing.ID} {
		before := int64(0)
		for {
			rs, err := st.RunList(ctx, store.RunListParams{JobID: j, BeforeID: before, Limit: 1000})
			require.NoError(t, err)
			for _, r := range rs {
				all[r.ID] = r
			}
			if len(rs) < 1000 {
				break
			}
			before = rs[len(rs)-1].ID
		}
	}
	// Count at the executor.
	childrenOf := map[int64]int{} // parent run -> child executions
	retriesOf := map[int64]int{}  // failed run -> retry executions
	for _, s := range readStats(t, execAddr).Seen {
		r, ok := all[s.LogID]
		require.True(t, ok, "the executor ran %d, which is no run of these jobs", s.LogID)
		switch {
		case r.JobID == child.ID:
			p, ok := strings.CutPrefix(r.IdempotencyKey, store.ParentRunKeyPrefix)
			require.True(t, ok, "child run %d has key %q", r.ID, r.IdempotencyKey)
			var id int64
			_, err := fmt.Sscan(p, &id)
			require.NoError(t, err)
			childrenOf[id]++
		case r.JobID == failing.ID && r.RetryOf != 0:
			retriesOf[r.RetryOf]++
		}
	}
	var succeeded, failed, unsent int
	for _, r := range all {
		switch {
		case r.JobID == parent.ID && r.State == kind.RunSucceeded:
			succeeded++
			checkOnce(t, fmt.Sprintf("parent run %d succeeded: its child", r.ID), childrenOf[r.ID], all, func(x store.Run) bool { return x.IdempotencyKey == store.ParentRunKey(r.ID) }, &unsent)
		case r.JobID == parent.ID:
			require.Zero(t, childrenOf[r.ID], "parent run %d ended %s: no child", r.ID, r.State)
		case r.JobID == failing.ID && r.Attempt == 0 && r.State.Retryable():
			failed++
			checkOnce(t, fmt.Sprintf("run %d %s: its retry", r.ID, r.State), retriesOf[r.ID], all, func(x store.Run) bool { return x.RetryOf == r.ID }, &unsent)
		}
	}
	t.Logf("%d SIGKILLs; %d parent successes each with one child run; %d failures each with one retry run; at the executor each ran once, "+
		"except %d whose replica died as it handed them over (recorded lost: delivery unknown)", kills, succeeded, failed, unsent)
	require.Greater(t, succeeded, 10)
	require.Greater(t, failed, 10)
}

// checkOnce checks one follow-up: exactly one run made for it in the ledger,
// and that run executed once at the executor, or not at all when its replica
// died while handing it over (then it is recorded lost, delivery unknown,
// and not re-sent: the hand-off rule of the scheduler; by the hand-off's
// own check, or by the run deadline when the executor seemed to hold it).
func checkOnce(t *testing.T, what string, executed int, all map[int64]store.Run, mine func(store.Run) bool, unsent *int) {
	t.Helper()
	var made []store.Run
	for _, x := range all {
		if mine(x) {
			made = append(made, x)
		}
	}
	require.Len(t, made, 1, "%s: runs made in the ledger: %v", what, made)
	if executed == 0 && made[0].State == kind.RunLost && (strings.Contains(made[0].Message, "whether it arrived is unknown") ||
		strings.Contains(made[0].Message, "no result will come; marked lost")) {
		*unsent++
		return
	}
	require.Equal(t, 1, executed, "%s (run %d, %s %q) ran %d times at the executor", what, made[0].ID, made[0].State, made[0].Message, executed)
}
