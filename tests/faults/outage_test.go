package faults_test

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// catchUpLag is how late an arrival must be to count as a catch-up: later
// than the misfire threshold (5 s) with a second of margin for the send.
const catchUpLag = 6 * time.Second

// TestFaultsDatabaseOutageFollowsMisfirePolicy (`make test-faults`): the
// database goes away for 15 s (SIGTERM, then SIGKILL) while fires wait in
// the replicas' rings, pools and hand-offs, with one retry configured. A
// database error is not a run's outcome: no run fails and none is retried
// because of the outage. Every fire that could not go out in time follows
// its job's misfire policy, wherever it waited: each fire_once_now job runs
// exactly one catch-up per outage, do_nothing jobs none, and the rest are
// recorded misfired. Counted at the executor.
func TestFaultsDatabaseOutageFollowsMisfirePolicy(t *testing.T) {
	if os.Getenv("RINGJOB_FAULTS") != "long" {
		t.Skip("set RINGJOB_FAULTS=long (make test-faults)")
	}
	const jobs = 40
	policy := func(i int) string {
		if i%2 == 0 {
			return "fire_once_now"
		}
		return "do_nothing"
	}
	c := newClusterWith(t, 3, jobs, clusterOptions{Job: func(i int, spec map[string]any) {
		spec["misfire_policy"] = policy(i)
		spec["retry_count"] = 1
	}})
	s := &scenario{c: c}
	s.warmUp(3 * time.Second)
	s.run("mariadbd SIGTERM, down 15 s, restarted", 12*time.Second, s.restartDB(syscall.SIGTERM, 15*time.Second))
	s.run("mariadbd SIGKILL, down 15 s, restarted", 12*time.Second, s.restartDB(syscall.SIGKILL, 15*time.Second))
	s.settle(90 * time.Second)
	rs := s.analyse()
	for _, r := range c.replicas {
		t.Log(warningSummary(r))
	}

	db := c.db.ringjob()
	defer db.Close()
	jobIDs := map[int64]string{} // job id -> misfire policy
	rows, err := db.Query("SELECT id, misfire_policy FROM jobs")
	require.NoError(t, err)
	for rows.Next() {
		var id int64
		var p string
		require.NoError(t, rows.Scan(&id, &p))
		jobIDs[id] = p
	}
	rows.Close()
	require.Len(t, jobIDs, jobs)
	var failed, retries int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM runs WHERE state IN ('failed','timed_out','lost')").Scan(&failed))
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM runs WHERE trigger_type = 'retry'").Scan(&retries))
	var examples []string
	rows, err = db.Query("SELECT id, state, message FROM runs WHERE state IN ('failed','timed_out','lost','dispatching') LIMIT 5")
	require.NoError(t, err)
	for rows.Next() {
		var id int64
		var st, msg string
		require.NoError(t, rows.Scan(&id, &st, &msg))
		examples = append(examples, fmt.Sprintf("run %d %s: %s", id, st, msg))
	}
	rows.Close()
	t.Logf("runs failed, lost or still dispatching: %v", examples)
	require.Zero(t, failed, "runs failed, timed out or lost because of a database outage: %v", examples)
	require.Zero(t, retries, "retries of runs the outage failed")

	check(t, rs)

	arrivals := c.exec.all()
	for _, p := range s.phases {
		catchUps := map[int64]int{}
		for _, a := range arrivals {
			if a.scheduledMs >= p.fromMs && a.scheduledMs < p.toMs && a.at.Sub(time.UnixMilli(a.scheduledMs)) > catchUpLag {
				catchUps[a.job]++
			}
		}
		var once, none int
		for id, pol := range jobIDs {
			if pol == "fire_once_now" {
				require.Equal(t, 1, catchUps[id], "%s: job %d (fire_once_now) ran %d catch-ups", p.name, id, catchUps[id])
				once++
			} else {
				require.Zero(t, catchUps[id], "%s: job %d (do_nothing) ran %d fires more than %s late", p.name, id, catchUps[id], catchUpLag)
				none++
			}
		}
		t.Logf("%s: one catch-up for each of %d fire_once_now jobs, none for %d do_nothing jobs", p.name, once, none)
	}
}
