package faults_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
)

// phase is one fault and the recovery after it; its fires are those
// scheduled in [fromMs, toMs).
type phase struct {
	name         string
	fromMs, toMs int64
}

// scenario runs faults against a cluster and records their windows.
type scenario struct {
	c      *cluster
	phases []phase
}

// nextSecond sleeps until just after the next second boundary plus off:
// the moment a replica is dispatching that second's fires.
func nextSecond(off time.Duration) time.Time {
	now := time.Now()
	at := now.Truncate(time.Second).Add(time.Second + off)
	time.Sleep(time.Until(at))
	return at
}

// run injects one fault (inject returns when the fault is over) and waits
// recover for the cluster to settle; the phase's fires are those scheduled
// from the fault's start to the end of the recovery.
func (s *scenario) run(name string, recover time.Duration, inject func()) {
	s.c.t.Helper()
	start := nextSecond(20 * time.Millisecond)
	s.c.t.Logf("%s: %s", start.Format("15:04:05.000"), name)
	inject()
	time.Sleep(recover)
	end := time.Now().Truncate(time.Second)
	s.phases = append(s.phases, phase{name: name, fromMs: start.Truncate(time.Second).UnixMilli(), toMs: end.UnixMilli()})
}

func (s *scenario) pick() *replica {
	var live []*replica
	for _, r := range s.c.replicas {
		if r.running() && !r.paused {
			live = append(live, r)
		}
	}
	return live[rand.N(len(live))]
}

func (s *scenario) killReplica(restartAfter time.Duration) func() {
	return func() {
		r := s.pick()
		s.c.signal(r, syscall.SIGKILL)
		time.Sleep(restartAfter)
		s.c.start(r)
	}
}

func (s *scenario) pauseReplica(d time.Duration) func() {
	return func() {
		r := s.pick()
		s.c.signal(r, syscall.SIGSTOP)
		time.Sleep(d)
		s.c.signal(r, syscall.SIGCONT)
	}
}

func (s *scenario) stopReplica(restartAfter time.Duration) func() {
	return func() {
		r := s.pick()
		s.c.signal(r, syscall.SIGTERM)
		time.Sleep(restartAfter)
		s.c.start(r)
	}
}

func (s *scenario) restartDB(sig syscall.Signal, down time.Duration) func() {
	return func() {
		s.c.db.stop(sig)
		time.Sleep(down)
		s.c.db.start()
	}
}

func (s *scenario) executorDown(d time.Duration) func() {
	return func() {
		s.c.exec.down()
		time.Sleep(d)
		s.c.exec.up()
	}
}

// result is what one phase's fires came to.
type result struct {
	phase       phase
	expected    int
	delivered   int // arrived at the executor (once)
	duplicates  int // arrivals beyond the first of a fire
	misfired    int
	lost        int
	lostArrived int // lost (delivery unknown) but in fact delivered
	failed      int // dispatch failed (the executor was down)
	missing     int // neither delivered nor recorded: a defect
	nonFinal    int // still not final after the settle time: a defect
	disagree    int // ledger and executor disagree (succeeded unseen, misfired or failed yet seen): a defect
	maxLag      time.Duration
	examples    []string
}

type fireKey struct{ job, ms int64 }

type ledgerRun struct {
	id      int64
	state   string
	message string
}

// settle waits until every run due before the last phase ended is final
// and the executor has reported everything.
func (s *scenario) settle(limit time.Duration) {
	s.c.t.Helper()
	db := s.c.db.ringjob()
	defer db.Close()
	last := s.phases[len(s.phases)-1].toMs
	deadline := time.Now().Add(limit)
	for {
		var open int
		err := db.QueryRow("SELECT COUNT(*) FROM runs WHERE scheduled_ms < ? AND state IN ('scheduled','dispatching','running')", last).Scan(&open)
		if err == nil && open == 0 && s.c.exec.pendingCallbacks() == 0 {
			return
		}
		if time.Now().After(deadline) {
			s.c.t.Logf("after %s, %d runs are still not final (err %v)", limit, open, err)
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// analyse compares the executor's record with the ledger, phase by phase.
func (s *scenario) analyse() []result {
	s.c.t.Helper()
	db := s.c.db.ringjob()
	defer db.Close()
	arrivals := map[fireKey][]arrival{}
	for _, a := range s.c.exec.all() {
		k := fireKey{a.job, a.scheduledMs}
		arrivals[k] = append(arrivals[k], a)
	}
	var jobs []int64
	rows, err := db.Query("SELECT id FROM jobs ORDER BY id")
	require.NoError(s.c.t, err)
	for rows.Next() {
		var id int64
		require.NoError(s.c.t, rows.Scan(&id))
		jobs = append(jobs, id)
	}
	rows.Close()
	ledger := map[fireKey][]ledgerRun{}
	rows, err = db.Query("SELECT id, job_id, scheduled_ms, state, message FROM runs WHERE trigger_type IN ('schedule','misfire')")
	require.NoError(s.c.t, err)
	for rows.Next() {
		var r ledgerRun
		var k fireKey
		require.NoError(s.c.t, rows.Scan(&r.id, &k.job, &k.ms, &r.state, &r.message))
		ledger[k] = append(ledger[k], r)
	}
	rows.Close()
	var out []result
	for _, p := range s.phases {
		res := result{phase: p}
		note := func(format string, args ...any) {
			if len(res.examples) < 5 {
				res.examples = append(res.examples, fmt.Sprintf(format, args...))
			}
		}
		for _, j := range jobs {
			for ms := p.fromMs; ms < p.toMs; ms += 1000 {
				k := fireKey{j, ms}
				res.expected++
				arr := arrivals[k]
				if len(arr) > 1 {
					res.duplicates += len(arr) - 1
					note("job %d fire %s arrived %d times", j, fmtMs(ms), len(arr))
				}
				if len(arr) > 0 {
					res.delivered++
					if lag := arr[0].at.Sub(time.UnixMilli(ms)); lag > res.maxLag {
						res.maxLag = lag
					}
				}
				runs := ledger[k]
				if len(runs) == 0 {
					if len(arr) == 0 {
						res.missing++
						note("job %d fire %s: no run and no arrival", j, fmtMs(ms))
					}
					continue
				}
				for _, r := range runs {
					switch r.state {
					case "succeeded":
						if len(arr) == 0 {
							res.disagree++
							note("run %d succeeded but never arrived", r.id)
						}
					case "misfired":
						res.misfired++
						if len(arr) > 0 {
							res.disagree++
							note("run %d misfired but arrived: %s", r.id, r.message)
						}
					case "lost":
						res.lost++
						if len(arr) > 0 {
							res.lostArrived++
						}
					case "failed":
						res.failed++
						if len(arr) > 0 {
							res.disagree++
							note("run %d failed but arrived: %s", r.id, r.message)
						}
					case "scheduled", "dispatching", "running":
						res.nonFinal++
						note("run %d (job %d fire %s) still %s: %s", r.id, j, fmtMs(ms), r.state, r.message)
					}
				}
			}
		}
		out = append(out, res)
	}
	return out
}

func fmtMs(ms int64) string { return time.UnixMilli(ms).UTC().Format("15:04:05") }

func table(rs []result) string {
	var b strings.Builder
	b.WriteString("| fault | fires expected | delivered | duplicates | misfired | lost (of which arrived) | failed | missing | not final | ledger disagrees | max lag |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d (%d) | %d | %d | %d | %d | %s |\n", r.phase.name, r.expected, r.delivered, r.duplicates,
			r.misfired, r.lost, r.lostArrived, r.failed, r.missing, r.nonFinal, r.disagree, r.maxLag.Round(10*time.Millisecond))
	}
	return b.String()
}

// check asserts the promises: never a duplicate, every fire delivered or
// recorded with its reason, nothing left unfinished, ledger and executor
// agree.
func check(t *testing.T, rs []result) {
	t.Helper()
	t.Logf("\n%s", table(rs))
	for _, r := range rs {
		var ex string
		if len(r.examples) > 0 {
			ex = "\n  " + strings.Join(r.examples, "\n  ")
		}
		require.Zero(t, r.duplicates, "%s: duplicates%s", r.phase.name, ex)
		require.Zero(t, r.missing, "%s: fires neither delivered nor recorded%s", r.phase.name, ex)
		require.Zero(t, r.nonFinal, "%s: runs not final%s", r.phase.name, ex)
		require.Zero(t, r.disagree, "%s: ledger disagrees with the executor%s", r.phase.name, ex)
		require.Equal(t, r.expected, r.delivered+r.misfired+r.failed+(r.lost-r.lostArrived), "%s: every fire delivered once or recorded%s", r.phase.name, ex)
	}
}

func (s *scenario) warmUp(d time.Duration) {
	time.Sleep(d)
}

// TestFaultsShort is the fault suite's short form (in `make test`): three
// replicas, 20 every-second jobs, one of each kind of fault, on MariaDB and
// then on PostgreSQL (one after the other: each run is timing-sensitive).
func TestFaultsShort(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process fault injection")
	}
	for _, db := range []string{"mysql", "postgres"} {
		t.Run(db, func(t *testing.T) {
			if db == "postgres" {
				skipWithoutPostgres(t)
			}
			c := newClusterWith(t, 3, 20, clusterOptions{Postgres: db == "postgres"})
			s := &scenario{c: c}
			s.warmUp(3 * time.Second)
			s.run("replica SIGKILL mid-dispatch, restarted after 2 s", 5*time.Second, s.killReplica(2*time.Second))
			s.run("replica SIGSTOP 5 s", 5*time.Second, s.pauseReplica(5*time.Second))
			s.run(c.db.name()+" SIGKILL, restarted after 3 s", 8*time.Second, s.restartDB(syscall.SIGKILL, 3*time.Second))
			s.settle(40 * time.Second)
			rs := s.analyse()
			for _, r := range c.replicas {
				t.Log(warningSummary(r))
			}
			check(t, rs)
			for _, r := range c.replicas {
				require.NotContains(t, r.logs(), `"level":"fatal"`, r.name)
			}
		})
	}
}

// skipWithoutPostgres skips the PostgreSQL runs as the other suites do
// without RINGJOB_POSTGRES_DSN (dbtest.Postgres), though the fault runs
// start a server of their own: one switch turns every PostgreSQL run on.
func skipWithoutPostgres(t *testing.T) {
	t.Helper()
	if os.Getenv(dbtest.EnvPostgresDSN) == "" {
		t.Skipf("%s is not set, so the PostgreSQL run is skipped (the fault runs start their own server; set it, or run `make test`)", dbtest.EnvPostgresDSN)
	}
}

// A replica's runs wait in its trigger pool's queue still scheduled: they
// are claimed and handed off in one statement right before their send. A
// replica SIGKILLed while runs wait there leaves them to the survivors,
// which send them; the runs it had handed to the executor (at most one per
// send slot) are asked about, and sent again if the executor never got
// them: none is lost. The replicas here have 4 workers
// and the executor takes 150 ms to answer each /run, so each second's fires
// of a replica (about 10) take about 0.4 s to send, and a kill 100 ms into
// the second finds most of them queued.
func TestFaultsQueuedRunsAreSentAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process fault injection")
	}
	const workers = 4
	c := newClusterWith(t, 3, 30, clusterOptions{
		Scheduler: fmt.Sprintf("  fast_pool: {workers: %d, queue: 200}\n", workers),
		RunDelay:  150 * time.Millisecond,
	})
	s := &scenario{c: c}
	s.warmUp(3 * time.Second)
	for i := 0; i < 2; i++ {
		s.run(fmt.Sprintf("replica SIGKILL with runs queued #%d, restarted after 2 s", i+1), 6*time.Second, func() {
			nextSecond(100 * time.Millisecond)
			r := s.pick()
			s.c.signal(r, syscall.SIGKILL)
			time.Sleep(2 * time.Second)
			s.c.start(r)
		})
	}
	s.settle(60 * time.Second)
	rs := s.analyse()
	for _, r := range c.replicas {
		t.Log(warningSummary(r))
	}
	check(t, rs)
	for _, r := range rs {
		// The executor can be asked about every run the dead replica had
		// handed: none is left lost.
		require.Zero(t, r.lost, "%s: runs lost to an executor that can be asked", r.phase.name)
	}
}

// TestFaultsLong is the long form (`make test-faults`): 200 every-second
// jobs and every fault of issue 10, one after the other. It writes the
// table to $RINGJOB_FAULTS_REPORT when set.
func TestFaultsLong(t *testing.T) {
	if os.Getenv("RINGJOB_FAULTS") != "long" {
		t.Skip("set RINGJOB_FAULTS=long (make test-faults)")
	}
	c := newCluster(t, 3, 200)
	s := &scenario{c: c}
	s.warmUp(5 * time.Second)
	for i := 0; i < 3; i++ {
		s.run(fmt.Sprintf("replica SIGKILL mid-dispatch #%d, restarted after 3 s", i+1), 12*time.Second, s.killReplica(3*time.Second))
	}
	for _, d := range []time.Duration{5 * time.Second, 20 * time.Second, 60 * time.Second} {
		s.run(fmt.Sprintf("replica SIGSTOP %s", d), 10*time.Second, s.pauseReplica(d))
	}
	s.run("mariadbd SIGTERM, down 15 s, restarted", 15*time.Second, s.restartDB(syscall.SIGTERM, 15*time.Second))
	s.run("mariadbd SIGKILL, down 15 s, restarted", 15*time.Second, s.restartDB(syscall.SIGKILL, 15*time.Second))
	s.run("executor down 30 s", 10*time.Second, s.executorDown(30*time.Second))
	s.run("replica SIGTERM (graceful), restarted after 5 s", 10*time.Second, s.stopReplica(5*time.Second))
	s.settle(120 * time.Second)
	rs := s.analyse()
	if p := os.Getenv("RINGJOB_FAULTS_REPORT"); p != "" {
		// make test-faults writes it under bin/, which a fresh clone lacks.
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(table(rs)), 0o644))
	}
	for _, r := range c.replicas {
		t.Log(warningSummary(r))
	}
	check(t, rs)
}

// warningSummary counts a replica's warning and error lines by message.
func warningSummary(r *replica) string {
	counts := map[string]int{}
	for _, line := range strings.Split(r.logs(), "\n") {
		var e struct {
			Level  string `json:"level"`
			Msg    string `json:"msg"`
			Reason string `json:"reason"`
		}
		if json.Unmarshal([]byte(line), &e) != nil || (e.Level != "warning" && e.Level != "error") {
			continue
		}
		k := e.Level + ": " + e.Msg
		if e.Reason != "" {
			k += " (" + e.Reason + ")"
		}
		counts[k]++
	}
	var keys []string
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return counts[keys[i]] > counts[keys[j]] })
	var b strings.Builder
	for i, k := range keys {
		if i == 8 {
			break
		}
		fmt.Fprintf(&b, "\n  %6d  %s", counts[k], k)
	}
	return r.name + ":" + b.String()
}

func TestFaultsDebug(t *testing.T) {
	if os.Getenv("RINGJOB_FAULTS") != "debug" {
		t.Skip()
	}
	c := newCluster(t, 3, 50)
	s := &scenario{c: c}
	s.warmUp(3 * time.Second)
	for i := 0; i < 3; i++ {
		s.run(fmt.Sprintf("kill %d", i), 8*time.Second, s.killReplica(3*time.Second))
	}
	s.settle(60 * time.Second)
	rs := s.analyse()
	t.Logf("\n%s", table(rs))
	for _, r := range c.replicas {
		t.Log(warningSummary(r))
	}
	db := c.db.ringjob()
	defer db.Close()
	rows, _ := db.Query("SELECT state, LEFT(message, 120), COUNT(*) FROM runs GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 10")
	for rows.Next() {
		var st, msg string
		var n int
		rows.Scan(&st, &msg, &n)
		t.Logf("%6d %s %s", n, st, msg)
	}
	rows.Close()
}
