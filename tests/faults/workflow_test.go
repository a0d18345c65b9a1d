package faults_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/wfcheck"
	"github.com/ringjob/ringjob/store"
)

// TestFaultsWorkflows runs workflows of 5 nodes (a fan-out, a failing node
// retried once, a fan-in on all_finished, a failure branch;
// wfcheck.Definition) on three replicas while replicas are SIGKILLed and
// restarted, SIGSTOPped, and the database is stopped (SIGTERM) and killed
// (SIGKILL) and restarted. Each workflow is triggered once through REST
// with an Idempotency-Key, a client sending the request again (to another
// replica) until one answers; some also fire on a schedule every 10 s.
// Afterwards every workflow run has ended, each node attempt has exactly
// its one run in the ledger, the executor ran each run at most once and
// every run not recorded lost exactly once, and no run exists without its
// attempt (internal/wfcheck, shared with the crash test). The long form
// (`make test-faults`) runs 200 workflows through at least 18 faults; the
// short one (`make test`) 50 through a replica SIGKILL, a database SIGKILL
// and more replica SIGKILLs until every workflow is triggered. Each runs on mariadbd and then on PostgreSQL.
func TestFaultsWorkflows(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process fault injection")
	}
	long := os.Getenv("RINGJOB_FAULTS") == "long"
	var rows []string
	for _, db := range []string{"mysql", "postgres"} {
		t.Run(db, func(t *testing.T) {
			if db == "postgres" {
				skipWithoutPostgres(t)
			}
			w := &wfFaults{workflows: 50, scheduled: 5, long: long}
			if long {
				w.workflows, w.scheduled = 200, 10
			}
			rows = append(rows, w.run(t, db == "postgres"))
		})
	}
	t.Logf("\n%s%s", wfTableHead, strings.Join(rows, ""))
}

// wfFaults is one run of the workflow fault test.
type wfFaults struct {
	workflows int // each triggered once through REST
	scheduled int // of which the first fire every 10 s too
	long      bool
}

const wfTableHead = "| database | workflow runs (REST + schedule) | succeeded / failed | node attempts | node runs | reached executor | lost unsent | lost after run | duplicates | missing | not final | key errors | SIGKILL / SIGSTOP / DB restarts | trigger resends | faults | settled |\n" +
	"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"

func (w *wfFaults) run(t *testing.T, postgres bool) string {
	ctx := context.Background()
	// The executor takes 50 ms to answer each /run, so that a kill finds
	// runs handed and not yet answered: the survivors must ask about them.
	c := newClusterWith(t, 3, 0, clusterOptions{Postgres: postgres, RunDelay: 50 * time.Millisecond})
	def := wfcheck.Definition(func(node string, fails bool) int64 {
		handler := "record"
		if fails {
			handler = failHandler
		}
		// A timeout: a result can be lost for good (every callback fell
		// while replicas restarted); the run is then recorded lost a
		// minute past it, and the node's retry runs it again.
		code, j := c.call("POST", "/api/v1/jobs", map[string]any{"group_id": c.group, "name": "wf-" + node, "handler": handler,
			"route_strategy": "first", "timeout_sec": 5})
		require.Equal(t, 201, code, "%v", j)
		return int64(j["id"].(float64))
	})
	// The schedules stop before the faults end, so that every run made
	// can be waited for.
	until := time.Now().Add(40 * time.Second)
	if w.long {
		until = time.Now().Add(90 * time.Second)
	}
	var ids []int64
	for i := 0; i < w.workflows; i++ {
		body := map[string]any{"group_id": c.group, "name": fmt.Sprintf("wf-%d", i), "definition": def}
		if i < w.scheduled {
			for k, v := range map[string]any{"schedule_type": "cron", "schedule_conf": "0/10 * * * * ?", "time_zone": "UTC",
				"misfire_policy": "do_nothing", "active_until": until.UTC().Format(time.RFC3339), "enabled": true} {
				body[k] = v
			}
		}
		code, wf := c.call("POST", "/api/v1/workflows", body)
		require.Equal(t, 201, code, "%v", wf)
		ids = append(ids, int64(wf["id"].(float64)))
	}

	var bases []string
	for _, r := range c.replicas {
		bases = append(bases, r.base())
	}
	pace := 200 * time.Millisecond // 50 workflows in 10 s
	if w.long {
		pace = 300 * time.Millisecond // 200 in a minute
	}
	trig := startTriggers(bases, ids, pace)
	t.Cleanup(trig.stop)
	s := &scenario{c: c}
	counts := map[string]int{}
	fault := func(kind, name string, recover time.Duration, inject func()) {
		counts[kind]++
		s.run(name, recover, inject)
	}
	dbName := c.db.name()
	started := time.Now()
	s.warmUp(time.Second)
	fault("kill", "replica SIGKILL, restarted after 2 s", 3*time.Second, s.killReplica(2*time.Second))
	if !w.long {
		fault("db", dbName+" SIGKILL, down 3 s, restarted", 5*time.Second, s.restartDB(syscall.SIGKILL, 3*time.Second))
	} else {
		fault("pause", "replica SIGSTOP 5 s", 3*time.Second, s.pauseReplica(5*time.Second))
		// Kills at random moments in quick succession, as in the crash
		// test, so that some fall between a node's run handed to the
		// executor and its answer.
		fault("", "10 replica SIGKILLs 0.3-1.2 s apart, each restarted at once", 3*time.Second, func() {
			for i := 0; i < 10; i++ {
				counts["kill"]++
				s.killReplica(0)()
				time.Sleep(time.Duration(300+rand.N(900)) * time.Millisecond)
			}
		})
		// A clean stop: SIGTERM for mariadbd; PostgreSQL's SIGTERM waits
		// for every client to leave (the replicas never do), its SIGINT
		// is the clean stop that ends their sessions.
		clean, cleanName := syscall.SIGTERM, "SIGTERM"
		if postgres {
			clean, cleanName = syscall.SIGINT, "SIGINT (fast shutdown)"
		}
		fault("db", dbName+" "+cleanName+", down 5 s, restarted", 6*time.Second, s.restartDB(clean, 5*time.Second))
		fault("kill", "replica SIGKILL, restarted after 2 s", 4*time.Second, s.killReplica(2*time.Second))
		fault("db", dbName+" SIGKILL, down 5 s, restarted", 6*time.Second, s.restartDB(syscall.SIGKILL, 5*time.Second))
		fault("pause", "replica SIGSTOP 10 s", 3*time.Second, s.pauseReplica(10*time.Second))
		fault("db", dbName+" SIGKILL and a replica SIGKILL while it is down, both restarted after 3 s", 6*time.Second, func() {
			counts["kill"]++
			c.db.stop(syscall.SIGKILL)
			r := s.pick()
			c.signal(r, syscall.SIGKILL)
			time.Sleep(3 * time.Second)
			c.db.start()
			c.start(r) // a server does not start without its database
		})
	}
	// Kills until every workflow has been triggered, then one more.
	for !trig.finished() {
		fault("kill", "replica SIGKILL, restarted after 2 s", 3*time.Second, s.killReplica(2*time.Second))
	}
	fault("kill", "replica SIGKILL, restarted after 2 s", 3*time.Second, s.killReplica(2*time.Second))
	faultsTook := time.Since(started)
	trig.stop()
	runIDs, resends, err := trig.result()
	require.NoError(t, err)
	require.Len(t, runIDs, w.workflows, "every workflow triggered")

	st, err := store.Open(ctx, c.db.url())
	require.NoError(t, err)
	defer st.Close()
	settleStart := time.Now()
	require.NoError(t, wfcheck.Settle(ctx, st, 4*time.Minute))
	settled := time.Since(settleStart)

	// Every workflow run, those the schedules made too.
	var all []int64
	byTrigger := map[kind.Trigger]int{}
	for before := int64(0); ; {
		rs, err := st.WorkflowRunList(ctx, store.WorkflowRunListParams{BeforeID: before, Limit: 500})
		require.NoError(t, err)
		for _, r := range rs {
			all = append(all, r.ID)
			byTrigger[r.TriggerType]++
		}
		if len(rs) < 500 {
			break
		}
		before = rs[len(rs)-1].ID
	}
	require.Equal(t, w.workflows, byTrigger[kind.TriggerManual], "one run per REST trigger, whatever the resends: %v", byTrigger)
	executed := map[int64]int{}
	for _, a := range c.exec.all() {
		executed[a.logID]++
	}
	rep, err := wfcheck.Check(ctx, st, def, all, executed)
	require.NoError(t, err)
	for _, r := range c.replicas {
		t.Log(warningSummary(r))
	}
	db := "MariaDB"
	if postgres {
		db = "PostgreSQL"
	}
	row := fmt.Sprintf("| %s | %d (%d + %d) | %d / %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d / %d / %d | %d | %s | %s |\n",
		db, len(all), byTrigger[kind.TriggerManual], len(all)-byTrigger[kind.TriggerManual], rep.States[kind.WorkflowSucceeded], rep.States[kind.WorkflowFailed],
		rep.Attempts, rep.Runs, rep.Executed, rep.Unsent, rep.LostAfterRun, rep.Duplicates, rep.Missing, rep.NonFinal, rep.KeyErrors,
		counts["kill"], counts["pause"], counts["db"], resends, faultsTook.Round(time.Second), settled.Round(time.Second))
	t.Logf("\n%s%s", wfTableHead, row)
	require.NoError(t, rep.Err())
	require.Greater(t, byTrigger[kind.TriggerSchedule], 0, "the schedules fired")
	// The definition's shape: a, b's two shards, c twice, d and e; a
	// retry adds attempts, so at least 7 runs a workflow run.
	require.GreaterOrEqual(t, rep.Runs, 7*len(all)-rep.Unsent)
	for _, r := range c.replicas {
		require.NotContains(t, r.logs(), `"level":"fatal"`, r.name)
	}
	return row
}

// triggers triggers each workflow once through REST, as a careful client
// does: with an Idempotency-Key, sending the request again (to the next
// replica) until one answers, so a replica killed or paused mid-request or
// a database down makes a resend, never a second run.
type triggers struct {
	bases  []string
	ids    []int64
	pace   time.Duration
	client *http.Client
	quit   chan struct{}
	done   chan struct{}
	once   sync.Once

	mu      sync.Mutex
	runs    map[int64]int64 // workflow -> its run
	resends int
	err     error // a resend answered with another run
}

func startTriggers(bases []string, ids []int64, pace time.Duration) *triggers {
	g := &triggers{bases: bases, ids: ids, pace: pace, client: &http.Client{Timeout: 3 * time.Second},
		quit: make(chan struct{}), done: make(chan struct{}), runs: map[int64]int64{}}
	go g.loop()
	return g
}

func (g *triggers) loop() {
	defer close(g.done)
	for i, id := range g.ids {
		key := fmt.Sprintf("faults-wf-%d", id)
		for try := 0; ; try++ {
			code, out, err := send(g.client, g.bases[(i+try)%len(g.bases)], "POST", fmt.Sprintf("/api/v1/workflows/%d/trigger", id), nil,
				map[string]string{"Idempotency-Key": key})
			if err == nil && (code == 200 || code == 201) {
				g.record(id, int64(out["id"].(float64)), try)
				break
			}
			if g.sleep(300 * time.Millisecond) {
				return
			}
		}
		if g.sleep(g.pace) {
			return
		}
	}
}

func (g *triggers) record(wf, run int64, resends int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.resends += resends
	if prev, ok := g.runs[wf]; ok && prev != run && g.err == nil {
		g.err = fmt.Errorf("workflow %d: a trigger with the same Idempotency-Key answered run %d, then run %d", wf, prev, run)
	}
	g.runs[wf] = run
}

// sleep waits d; true when told to stop.
func (g *triggers) sleep(d time.Duration) bool {
	select {
	case <-g.quit:
		return true
	case <-time.After(d):
		return false
	}
}

func (g *triggers) finished() bool {
	select {
	case <-g.done:
		return true
	default:
		return false
	}
}

// stop ends the loop and waits for it; safe to call twice.
func (g *triggers) stop() {
	g.once.Do(func() { close(g.quit) })
	<-g.done
}

// result is the run of each workflow triggered, the requests sent again,
// and a trigger answered with two runs.
func (g *triggers) result() (map[int64]int64, int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.runs, g.resends, g.err
}
