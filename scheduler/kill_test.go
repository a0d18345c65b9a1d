package scheduler_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/schedule"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
)

// fileDriver appends one line per dispatch to a shared file, so dispatches of
// a process that gets SIGKILLed are still counted by the test.
type fileDriver struct {
	node  string
	clock clockwork.Clock
	mu    sync.Mutex
	f     *os.File
}

func (d *fileDriver) Run(ctx context.Context, req targets.Request) (targets.Dispatch, error) {
	line := fmt.Sprintf("%s %d %d %d %d\n", d.node, req.RunID, req.JobID, req.ScheduledAt.UnixMilli(), d.clock.Now().UnixMilli())
	d.mu.Lock()
	_, err := d.f.WriteString(line)
	d.mu.Unlock()
	if err != nil {
		return targets.Dispatch{}, err
	}
	return targets.Dispatch{Done: &targets.Outcome{State: kind.RunSucceeded, Code: 200}}, nil
}
func (d *fileDriver) Beat(context.Context, string) error               { return nil }
func (d *fileDriver) IdleBeat(context.Context, string, int64) error    { return nil }
func (d *fileDriver) Kill(context.Context, string, int64, int64) error { return nil }
func (d *fileDriver) Log(context.Context, string, int64, int) (targets.LogChunk, error) {
	return targets.LogChunk{}, nil
}

// startFileScheduler starts a scheduler whose targets append to path; stop
// ends the scheduler and closes what it opened.
func startFileScheduler(ctx context.Context, dsn, node, path string) (s *scheduler.Scheduler, stop func(), err error) {
	open := store.OpenMySQL
	if strings.HasPrefix(dsn, "postgres://") {
		open = store.OpenPostgres
	}
	st, err := open(ctx, dsn)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	clock := clockwork.NewRealClock()
	reg := targets.NewRegistry()
	reg.Register("rec", &fileDriver{node: node, clock: clock, f: f})
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	s, err = scheduler.New(scheduler.Options{Config: scheduler.Config{NodeID: node}, Store: st, Drivers: reg, Clock: clock, Log: logrus.NewEntry(log)})
	if err != nil {
		st.Close()
		f.Close()
		return nil, nil, err
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			s.Stop(context.Background())
			st.Close()
			f.Close()
		})
	}
	return s, stop, s.Start(ctx)
}

// runChildIfAsked turns the test binary into a scheduler process for the
// SIGKILL test. It never returns in the child.
func runChildIfAsked() bool {
	if os.Getenv("RINGJOB_TEST_CHILD") != "scheduler" {
		return false
	}
	_, _, err := startFileScheduler(context.Background(), os.Getenv("RINGJOB_TEST_DSN"), os.Getenv("RINGJOB_TEST_NODE"), os.Getenv("RINGJOB_TEST_OUT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child scheduler:", err)
		os.Exit(2)
	}
	fmt.Println("ready")
	select {}
}

type fileLine struct {
	node                  string
	runID, jobID, schedMs int64
	atMs                  int64
}

func readLines(t *testing.T, path string) []fileLine {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var out []fileLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l fileLine
		if n, _ := fmt.Sscanf(sc.Text(), "%s %d %d %d %d", &l.node, &l.runID, &l.jobID, &l.schedMs, &l.atMs); n == 5 {
			out = append(out, l)
		}
	}
	return out
}

func TestLeaderKilledWithSIGKILL(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real-time multi-process test")
	}
	eachServer(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		dsn, open := dbtest.MySQL, store.OpenMySQL
		if dialect == "postgres" {
			dsn, open = dbtest.Postgres, store.OpenPostgres
		}
		leaderKilledWithSIGKILL(t, ctx, dsn(t), open)
	})
}

func leaderKilledWithSIGKILL(t *testing.T, ctx context.Context, dsn string, open func(context.Context, string) (*store.Store, error)) {
	st, err := open(ctx, dsn)
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	now := time.Now()
	g, err := st.GroupCreate(ctx, store.GroupCreateParams{AppName: "kill", Members: []string{"rec://x"}, NowMs: now.UnixMilli()})
	require.NoError(t, err)
	sched, err := schedule.Parse(schedule.KindCron, "* * * * * ?", "UTC")
	require.NoError(t, err)
	var jobs []store.Job
	for i := 0; i < 10; i++ {
		policy := kind.MisfireDoNothing
		if i%2 == 1 {
			policy = kind.MisfireFireOnceNow
		}
		next, _ := sched.Next(now.Add(time.Second))
		j, err := st.JobCreate(ctx, store.JobCreateParams{JobFields: store.JobFields{GroupID: g.ID, Name: fmt.Sprint("j", i), ScheduleType: "cron",
			ScheduleConf: "* * * * * ?", TimeZone: "UTC", MisfirePolicy: policy, ShardCount: 1}, Enabled: true, NextFireMs: next.UnixMilli(), NowMs: now.UnixMilli()})
		require.NoError(t, err)
		jobs = append(jobs, j)
	}
	out := filepath.Join(t.TempDir(), "dispatches.log")

	// The victim: a real process, started alone so it leads and fills its ring.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RINGJOB_TEST_CHILD=scheduler", "RINGJOB_TEST_DSN="+dsn, "RINGJOB_TEST_NODE=victim", "RINGJOB_TEST_OUT="+out)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer cmd.Process.Kill()
	ready, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", ready)
	require.Eventually(t, func() bool { return len(readLines(t, out)) >= 30 }, 15*time.Second, 20*time.Millisecond, "victim dispatches")

	_, stopSurvivor, err := startFileScheduler(ctx, dsn, "survivor", out)
	require.NoError(t, err)
	defer stopSurvivor()
	time.Sleep(1500 * time.Millisecond)

	ownedBeforeKill, err := st.RunList(ctx, store.RunListParams{States: []kind.RunState{kind.RunScheduled, kind.RunDispatching}, Limit: 1000})
	require.NoError(t, err)
	kill := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	victimRing := 0
	for _, r := range ownedBeforeKill {
		if r.Owner == "victim" {
			victimRing++
		}
	}
	t.Logf("victim owned %d unfired runs just before the kill", victimRing)
	require.Greater(t, victimRing, 0)

	time.Sleep(6 * time.Second)
	stopSurvivor()
	end := time.Now()

	lines := readLines(t, out)
	seen := map[[2]int64]int{}
	var firstVictim int64
	for _, l := range lines {
		seen[[2]int64{l.jobID, l.schedMs}]++
		if l.node == "victim" && (firstVictim == 0 || l.schedMs < firstVictim) {
			firstVictim = l.schedMs
		}
	}
	for k, n := range seen {
		require.Equal(t, 1, n, "job %d fire %s dispatched %d times", k[0], secs(k[1]), n)
	}
	// Every fire time from the victim's first to shortly before the end was
	// dispatched once, or recorded as misfired or lost.
	runs, err := st.RunList(ctx, store.RunListParams{Limit: 1000})
	require.NoError(t, err)
	byFire := map[[2]int64]store.Run{}
	for _, r := range runs {
		byFire[[2]int64{r.JobID, r.ScheduledMs}] = r
		require.False(t, r.Owner == "victim" && (r.State == kind.RunScheduled || r.State == kind.RunDispatching),
			"run %d left %s by the dead node", r.ID, r.State)
	}
	var misfired, lost int
	for _, j := range jobs {
		for ms := firstVictim; ms <= end.Add(-2*time.Second).UnixMilli(); ms += 1000 {
			k := [2]int64{j.ID, ms}
			if seen[k] == 1 {
				continue
			}
			r, ok := byFire[k]
			require.True(t, ok, "job %d fire %s has no run", j.ID, secs(ms))
			require.Contains(t, []kind.RunState{kind.RunMisfired, kind.RunLost}, r.State, "job %d fire %s: %s %s", j.ID, secs(ms), r.State, r.Message)
			if r.State == kind.RunMisfired {
				misfired++
			} else {
				lost++
			}
		}
	}
	// The gap from the kill to the first dispatch of a run the victim owned.
	var firstOrphan int64
	taken := 0
	for _, r := range runs {
		if strings.Contains(r.Message, "taken over from dead node victim") {
			taken++
		}
	}
	takenIDs := map[int64]bool{}
	for _, r := range runs {
		if strings.HasPrefix(r.Message, "taken over from dead node victim") || (r.Owner == "survivor" && wasVictims(ownedBeforeKill, r.ID)) {
			takenIDs[r.ID] = true
		}
	}
	for _, l := range lines {
		if l.node == "survivor" && takenIDs[l.runID] && (firstOrphan == 0 || l.atMs < firstOrphan) {
			firstOrphan = l.atMs
		}
	}
	require.NotZero(t, firstOrphan, "the survivor dispatched none of the victim's runs")
	gap := time.UnixMilli(firstOrphan).Sub(kill)
	t.Logf("SIGKILL -> first orphan dispatch: %s; victim's unfired runs: %d; taken over: %d; misfired: %d; lost: %d; dispatches: %d",
		gap.Round(time.Millisecond), victimRing, len(takenIDs), misfired, lost, len(lines))
	fmt.Printf("SIGKILL -> first orphan dispatch: %s\n", gap.Round(time.Millisecond))
}

func wasVictims(rs []store.Run, id int64) bool {
	for _, r := range rs {
		if r.ID == id && r.Owner == "victim" {
			return true
		}
	}
	return false
}
