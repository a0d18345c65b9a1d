package scheduler_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/store"
)

// killSessions ends every database session on the test's database, as a
// database restart does: every liveness lock is free at once.
func killSessions(t *testing.T, b *bundle) int {
	t.Helper()
	ctx := context.Background()
	if b.st.Kind() == "postgres" {
		var n int
		require.NoError(t, b.st.DB().QueryRowContext(ctx, `SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity
 WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n))
		return n
	}
	var db string
	require.NoError(t, b.st.DB().QueryRowContext(ctx, "SELECT DATABASE()").Scan(&db))
	admin, err := sql.Open("mysql", dbtest.MySQLServerDSN(t))
	require.NoError(t, err)
	defer admin.Close()
	rows, err := admin.QueryContext(ctx, "SELECT id FROM information_schema.processlist WHERE db = ? AND id <> CONNECTION_ID()", db)
	require.NoError(t, err)
	var ids []int64
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	rows.Close()
	for _, id := range ids {
		if _, err := admin.ExecContext(ctx, "KILL CONNECTION ?", id); err != nil && !strings.Contains(err.Error(), "Unknown thread") {
			require.NoError(t, err)
		}
	}
	return len(ids)
}

func requireNoneDeclared(t *testing.T, b *bundle) {
	t.Helper()
	nodes, err := b.st.NodeList(context.Background())
	require.NoError(t, err)
	for _, n := range nodes {
		require.False(t, n.Declared(), "node %s declared dead", n.ID)
	}
}

// When every database session drops at once (a database restart), every
// liveness lock is free and every heartbeat is stale; that is no evidence
// that anyone died. No replica declares another dead, none takes over the
// others' runs, and every fire goes out once.
func TestDroppedSessionsAreNotDeath(t *testing.T) {
	t.Parallel()
	eachServer(t, testDroppedSessionsAreNotDeath)
}

func testDroppedSessionsAreNotDeath(t *testing.T, dialect string) {
	b := setup(t, dialect, noon)
	var jobs []store.Job
	for i := 0; i < 20; i++ {
		jobs = append(jobs, b.job("every-second", "cron", "* * * * * ?", "UTC", "", 0))
	}
	p2 := func(c *scheduler.Config) { c.LockPartitions = 2 }
	b.startNode("a", p2)
	b.startNode("b", p2)
	b.step(2, 4*time.Second)
	for i := 0; i < 3; i++ {
		// Sessions drop between statements here (the replicas are idle on
		// the clock and their writes are done), so no answer is lost: what
		// is tested is that nobody counts the drop as a death.
		for _, j := range jobs {
			b.waitSettledRuns(j.ID)
		}
		require.Greater(t, killSessions(t, b), 0)
		b.step(2, 4*time.Second)
		requireNoneDeclared(t, b)
	}
	b.step(2, 2*time.Second)
	ds := b.waitDispatched(20 * 18)
	time.Sleep(50 * time.Millisecond)
	ds = b.waitDispatched(len(ds))
	exactlyOnce(t, ds, jobs, at(12, 0, 1), at(12, 0, 18))
	requireNoneDeclared(t, b)
	for _, j := range jobs {
		for _, r := range b.waitSettledRuns(j.ID) {
			require.NotContains(t, r.Message, "taken over", "run %d", r.ID)
			require.NotEqual(t, kind.RunLost, r.State, "run %d: %s", r.ID, r.Message)
		}
	}
}

// A paused replica (its process frozen, its database session alive) loses
// its partition after the partition lease and its waiting runs to the
// others, so its fires go out late but on the right side of the misfire
// threshold; after node_dead_after its session is ended and it is declared
// dead. When it wakes up it learns so, drops its ring and rejoins; nothing
// it held is sent twice.
func TestPausedReplicaHandsOverWithinTheLease(t *testing.T) {
	t.Parallel()
	eachServer(t, testPausedReplicaHandsOverWithinTheLease)
}

func testPausedReplicaHandsOverWithinTheLease(t *testing.T, dialect string) {
	b := setup(t, dialect, noon)
	var jobs []store.Job
	for i := 0; i < 20; i++ {
		jobs = append(jobs, b.job("every-second", "cron", "* * * * * ?", "UTC", "", 0))
	}
	p2 := func(c *scheduler.Config) { c.LockPartitions = 2 }
	frozenClock := clockwork.NewFakeClockAt(noon)
	b.startNode("a", p2)
	frozen := b.startNodeOn("frozen", frozenClock, p2)
	// The frozen node pre-read its partition once at start; from now on its
	// clock stands still.
	b.step(1, 14*time.Second)
	nodes, err := b.st.NodeList(context.Background())
	require.NoError(t, err)
	for _, n := range nodes {
		require.Equal(t, n.ID == "frozen", n.Declared(), "node %s", n.ID)
	}
	// It wakes up: it learns it was declared dead and rejoins.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := 0; i < 3; i++ {
		require.NoError(t, frozenClock.BlockUntilContext(ctx, frozen.s.ClockWaiters()))
		frozenClock.Advance(time.Second)
	}
	require.NoError(t, frozenClock.BlockUntilContext(ctx, frozen.s.ClockWaiters()))
	b.step(1, 2*time.Second)
	frozen.s.Stop(context.Background())
	b.step(1, 2*time.Second)

	ds := b.waitDispatched(20 * 16)
	time.Sleep(50 * time.Millisecond)
	ds = b.waitDispatched(len(ds))
	exactlyOnce(t, ds, jobs, at(12, 0, 1), at(12, 0, 16))
	require.Empty(t, frozen.rec.all(), "the frozen node sent nothing")
	for _, j := range jobs {
		for _, r := range b.waitSettledRuns(j.ID) {
			if r.ScheduledMs > at(12, 0, 16) {
				continue // still in the ring
			}
			require.Equal(t, kind.RunSucceeded, r.State, "run %d (%s): %s", r.ID, secs(r.ScheduledMs), r.Message)
		}
	}
}
