package retention_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/maintenance/retention"
	"github.com/ringjob/ringjob/store"
)

func partitionNames(t *testing.T, st *store.Store) []string {
	t.Helper()
	parts, partitioned, err := st.RunPartitions(context.Background())
	require.NoError(t, err)
	require.True(t, partitioned)
	var out []string
	for _, p := range parts {
		out = append(out, p.Name)
	}
	return out
}

func countRuns(t *testing.T, st *store.Store) int {
	var n int
	require.NoError(t, st.DB().QueryRow("SELECT COUNT(*) FROM runs").Scan(&n))
	return n
}

// TestPartitionMaintenanceIdempotent: three replicas converting and
// extending the day partitions at once, then again after a "restart", make
// one consistent set of partitions and lose no run; the fire key and
// idempotency keys still hold on the partitioned table.
func TestPartitionMaintenanceIdempotent(t *testing.T) {
	t.Parallel()
	storetest.EachServer(t, testPartitionMaintenanceIdempotent)
}

func testPartitionMaintenanceIdempotent(t *testing.T, st *store.Store) {
	ctx := context.Background()
	f := newFixture(t, st, "app")
	now := t0.Add(10 * day)
	for d := 0; d < 10; d++ {
		f.run(runSpec{group: "app", at: t0.Add(time.Duration(d) * day), state: kind.RunSucceeded})
	}
	keyed := f.run(runSpec{group: "app", at: now.Add(-time.Hour), state: kind.RunSucceeded, key: "k-1"})
	before := countRuns(t, st)

	ensure := func(at time.Time) {
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = st.RunPartitionsEnsure(ctx, store.RunPartitionsEnsureParams{NowMs: at.UnixMilli(), AheadDays: 3})
			}()
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
	}
	ensure(now)
	names := partitionNames(t, st)
	require.Equal(t, "p20260301", names[0], "one partition per day from the oldest run")
	require.Equal(t, "p20260314", names[len(names)-2], "today (03-11) and 3 days ahead")
	require.Equal(t, "pmax", names[len(names)-1])
	require.Len(t, names, 15)
	require.Equal(t, before, countRuns(t, st))

	// A restart: nothing changes.
	created, err := st.RunPartitionsEnsure(ctx, store.RunPartitionsEnsureParams{NowMs: now.UnixMilli(), AheadDays: 3})
	require.NoError(t, err)
	require.Empty(t, created)
	require.Equal(t, names, partitionNames(t, st))

	// Two days later: two more days ahead, nothing else touched.
	ensure(now.Add(2 * day))
	require.Equal(t, append(append([]string{}, names[:len(names)-1]...), "p20260315", "p20260316", "pmax"), partitionNames(t, st))

	// The keys still work: a fire is unique, an idempotency key returns its run.
	j := f.job["app"]
	dup, _, err := st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: now.UnixMilli(), ShardTotal: 1, SchedFire: true,
		TriggerType: kind.TriggerSchedule, Owner: "n1", CreatedMs: now.UnixMilli()})
	require.NoError(t, err)
	again, created2, err := st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: now.UnixMilli(), ShardTotal: 1, SchedFire: true,
		TriggerType: kind.TriggerSchedule, Owner: "n1", CreatedMs: now.UnixMilli()})
	require.NoError(t, err)
	require.False(t, created2)
	require.Equal(t, dup.ID, again.ID)
	same, created3, err := st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: now.UnixMilli() + 5, ShardTotal: 1,
		TriggerType: kind.TriggerManual, Owner: "n1", IdempotencyKey: "k-1", CreatedMs: now.UnixMilli()})
	require.NoError(t, err)
	require.False(t, created3)
	require.Equal(t, keyed, same.ID)
}

// TestPartitionedRetention: day partitions past the retention are dropped
// whole; one that holds a run still needed is emptied of the others and
// dropped once that run is done; partitions ahead keep being created.
func TestPartitionedRetention(t *testing.T) {
	t.Parallel()
	storetest.EachServer(t, testPartitionedRetention)
}

func testPartitionedRetention(t *testing.T, st *store.Store) {
	ctx := context.Background()
	f := newFixture(t, st, "app")
	var done []int64
	for d := 0; d < 5; d++ {
		for i := 0; i < 3; i++ {
			done = append(done, f.run(runSpec{group: "app", at: t0.Add(time.Duration(d)*day + time.Duration(i)*time.Hour), state: kind.RunSucceeded, log: "x\n"}))
		}
	}
	failed := f.run(runSpec{group: "app", at: t0.Add(day + 5*time.Hour), state: kind.RunFailed}) // follow-up pending, on day 2
	keyed := f.run(runSpec{group: "app", at: t0.Add(2 * day), state: kind.RunSucceeded, key: "old-key"})
	recent := f.run(runSpec{group: "app", at: t0.Add(33 * day), state: kind.RunSucceeded})

	clock := clockwork.NewFakeClockAt(t0.Add(34*day + 12*time.Hour))
	w := newWorker(t, st, clock, "n1", retention.Config{Runs: retention.Age(31 * day), Partitioned: true}, false)
	res, err := w.Cycle(ctx)
	require.NoError(t, err)
	// Now 04-05 00:00, cutoff 03-05 00:00: the days 03-01..03-04 are past it.
	require.Equal(t, []string{"p20260301", "p20260303", "p20260304"}, res.Dropped, "03-02 holds a failure whose follow-up is pending")
	require.Equal(t, int64(3), res.Runs, "the other runs of 03-02 go by rows")
	require.True(t, f.exists(failed))
	require.False(t, f.exists(keyed))
	for _, id := range done[:12] {
		require.False(t, f.exists(id))
	}
	for _, id := range done[12:] {
		require.True(t, f.exists(id), "03-05 is within the retention")
	}
	for _, id := range done[3:6] {
		require.False(t, f.exists(id), "the other runs of 03-02")
	}
	require.True(t, f.exists(recent))
	var keys int
	require.NoError(t, st.DB().QueryRow("SELECT COUNT(*) FROM run_keys WHERE idempotency_key = 'old-key'").Scan(&keys))
	require.Zero(t, keys, "the dropped run's idempotency key goes too")
	require.Contains(t, partitionNames(t, st), "p20260407", "partitions are kept 3 days ahead")
	// Logs of dropped runs are orphans and go with the log purge.
	for _, id := range done[:6] {
		require.False(t, f.hasLog(id))
	}

	// The follow-up is done: the day goes whole next time.
	ok, err := st.RunFollowupDone(ctx, failed)
	require.NoError(t, err)
	require.True(t, ok)
	res, err = w.Cycle(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"p20260302"}, res.Dropped)
	require.False(t, f.exists(failed))

	// A restart changes nothing more.
	w2 := newWorker(t, st, clock, "n1", retention.Config{Runs: retention.Age(31 * day), Partitioned: true}, false)
	res, err = w2.Cycle(ctx)
	require.NoError(t, err)
	require.Empty(t, res.Dropped)
	require.Empty(t, res.Created)
	require.Zero(t, res.Runs)
}

func logPartitionNames(t *testing.T, st *store.Store) []string {
	t.Helper()
	parts, partitioned, err := st.RunLogPartitions(context.Background())
	require.NoError(t, err)
	require.True(t, partitioned, "run_logs is partitioned along with runs")
	var out []string
	for _, p := range parts {
		out = append(out, p.Name)
	}
	return out
}

// TestLogPartitions: run_logs is partitioned by run id ranges ahead of the
// ids in use, the same set whoever and however often maintenance runs; a
// log partition goes whole once none of its runs is left, and logs of runs
// still there stay readable.
func TestLogPartitions(t *testing.T) {
	t.Parallel()
	storetest.EachServer(t, testLogPartitions)
}

func testLogPartitions(t *testing.T, st *store.Store) {
	ctx := context.Background()
	f := newFixture(t, st, "app")
	var early []int64
	for d := 0; d < 3; d++ {
		early = append(early, f.run(runSpec{group: "app", at: t0.Add(time.Duration(d) * day), state: kind.RunSucceeded, log: "early\n"}))
	}
	now := t0.Add(3 * day)
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := st.RunPartitionsEnsure(ctx, store.RunPartitionsEnsureParams{NowMs: now.UnixMilli(), AheadDays: 3})
			require.NoError(t, err)
		}()
	}
	wg.Wait()
	names := logPartitionNames(t, st)
	require.Equal(t, "lmax", names[len(names)-1])
	parts, _, err := st.RunLogPartitions(ctx)
	require.NoError(t, err)
	first := parts[0]
	require.Greater(t, first.BeforeMs, early[2], "the first log partition holds the logs there were")
	created, err := st.RunPartitionsEnsure(ctx, store.RunPartitionsEnsureParams{NowMs: now.UnixMilli(), AheadDays: 3})
	require.NoError(t, err)
	require.Empty(t, created, "a restart changes nothing")
	require.Equal(t, names, logPartitionNames(t, st))

	// A run past the first log partition's range, with its log (as if the
	// ids of a day had been handed out since).
	late := first.BeforeMs + 5
	_, err = st.DB().Exec(`INSERT INTO runs (id, job_id, group_id, scheduled_ms, trigger_type, state, owner, params, message, created_ms)
 VALUES (?, ?, ?, ?, 'manual', 'succeeded', 'n1', '', '', ?)`, late, f.job["app"].ID, f.job["app"].GroupID, now.Add(30*day).UnixMilli(), now.Add(30*day).UnixMilli())
	require.NoError(t, err)
	require.NoError(t, st.RunLogAppend(ctx, late, "late\n"))

	// The early runs' days are past the retention: their runs go by
	// partition, then their logs' partition.
	clock := clockwork.NewFakeClockAt(now.Add(31 * day))
	w := newWorker(t, st, clock, "n1", retention.Config{Runs: retention.Age(30 * day), Partitioned: true}, false)
	res, err := w.Cycle(ctx)
	require.NoError(t, err)
	require.Contains(t, res.Dropped, first.Name)
	for _, id := range early {
		require.False(t, f.exists(id))
		require.False(t, f.hasLog(id))
	}
	require.True(t, f.hasLog(late), "the log of a run that is still there")
	log, err := st.RunLogRead(ctx, late, 1)
	require.NoError(t, err)
	require.Equal(t, "late\n", log.Content)
	require.NotContains(t, logPartitionNames(t, st), first.Name)
	res, err = w.Cycle(ctx)
	require.NoError(t, err)
	require.NotContains(t, res.Dropped, first.Name, "idempotent")
}

// TestPartitionedRetentionKeepsNeededRunsAcrossReplicas: with day
// partitions, a day past the retention that holds a run still needed (not
// final, a failure with its retry pending, the parent of a child not done)
// is not dropped while two replicas run the worker at once (one purges);
// after the holder dies the other takes over and drops those days once
// their runs are done; restarted workers then change nothing, and both
// replicas see the same partitions.
func TestPartitionedRetentionKeepsNeededRunsAcrossReplicas(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Servers {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			dsn, open := dbtest.MySQL, store.OpenMySQL
			if dialect == "postgres" {
				dsn, open = dbtest.Postgres, store.OpenPostgres
			}
			partitionedRetentionKeepsNeededRunsAcrossReplicas(t, dsn(t), open)
		})
	}
}

func partitionedRetentionKeepsNeededRunsAcrossReplicas(t *testing.T, dsn string, openDSN func(context.Context, string) (*store.Store, error)) {
	ctx := context.Background()
	open := func() *store.Store {
		st, err := openDSN(ctx, dsn)
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		return st
	}
	stA, stB := open(), open()
	_, err := stA.Migrate(ctx)
	require.NoError(t, err)
	f := newFixture(t, stA, "app")
	on := func(d int) time.Time { return t0.Add(time.Duration(d)*day + time.Hour) }
	running := f.run(runSpec{group: "app", at: on(0), state: kind.RunRunning})
	scheduled := f.run(runSpec{group: "app", at: on(1), state: kind.RunScheduled})
	retried := f.run(runSpec{group: "app", at: on(2), state: kind.RunFailed, followup: true})
	parent := f.run(runSpec{group: "app", at: on(3), state: kind.RunSucceeded})
	var plain []int64 // one finished run on each of those days and on day 4
	for d := 0; d < 5; d++ {
		plain = append(plain, f.run(runSpec{group: "app", at: on(d).Add(time.Minute), state: kind.RunSucceeded}))
	}
	now := t0.Add(40 * day)
	retry := f.run(runSpec{group: "app", at: now.Add(-time.Minute), state: kind.RunScheduled, retryOf: retried})
	child := f.run(runSpec{group: "app", at: now.Add(-time.Minute), state: kind.RunRunning, key: store.ParentRunKey(parent)})

	clock := clockwork.NewFakeClockAt(now)
	cfg := retention.Config{Runs: retention.Age(30 * day), Partitioned: true}
	both := func(wA, wB *retention.Worker) (retention.Result, retention.Result) {
		var wg sync.WaitGroup
		var resA, resB retention.Result
		var errA, errB error
		wg.Add(2)
		go func() { defer wg.Done(); resA, errA = wA.Cycle(ctx) }()
		go func() { defer wg.Done(); resB, errB = wB.Cycle(ctx) }()
		wg.Wait()
		require.NoError(t, errA)
		require.NoError(t, errB)
		return resA, resB
	}
	// The table is converted by whichever replica comes first; the other
	// finds it done.
	resA, resB := both(newWorker(t, stA, clock, "n1", cfg, false), newWorker(t, stB, clock, "n2", cfg, false))
	require.NotEqual(t, resA.Held, resB.Held, "exactly one replica purges")
	holder := resA
	if resB.Held {
		holder = resB
	}
	require.Contains(t, holder.Dropped, "p20260305", "a day without a needed run goes whole (and the empty days after it)")
	for _, p := range []string{"p20260301", "p20260302", "p20260303", "p20260304"} {
		require.NotContains(t, holder.Dropped, p, "a day with a needed run stays")
	}
	for name, id := range map[string]int64{"running": running, "scheduled": scheduled, "retried": retried, "parent": parent, "retry": retry, "child": child} {
		require.True(t, f.exists(id), "%s (%d) is still needed", name, id)
	}
	for _, id := range plain {
		require.False(t, f.exists(id), "a finished run past its retention goes (by rows on a day that must stay)")
	}

	// The needed runs end; the holder dies (its lease expires) and the
	// other replica takes over.
	for id, from := range map[int64]kind.RunState{running: kind.RunRunning, scheduled: kind.RunScheduled, retry: kind.RunScheduled, child: kind.RunRunning} {
		ok, err := stA.RunSetState(ctx, id, from, kind.RunSucceeded, "", now.UnixMilli())
		require.NoError(t, err)
		require.True(t, ok)
	}
	clock.Advance(3 * time.Minute)
	wA, wB := newWorker(t, stA, clock, "n1", cfg, false), newWorker(t, stB, clock, "n2", cfg, false)
	var res retention.Result
	if resA.Held {
		res, err = wB.Cycle(ctx)
	} else {
		res, err = wA.Cycle(ctx)
	}
	require.NoError(t, err)
	require.True(t, res.Held, "the other replica takes over once the lease expired")
	require.Equal(t, []string{"p20260301", "p20260302", "p20260303", "p20260304"}, res.Dropped)
	for _, id := range []int64{running, scheduled, retried, parent} {
		require.False(t, f.exists(id))
	}
	require.True(t, f.exists(retry) && f.exists(child), "young runs stay")

	// Restarts of both: nothing more to do, and one set of partitions.
	clock.Advance(3 * time.Minute)
	resA, resB = both(newWorker(t, stA, clock, "n1", cfg, false), newWorker(t, stB, clock, "n2", cfg, false))
	for _, r := range []retention.Result{resA, resB} {
		require.Empty(t, r.Dropped)
		require.Empty(t, r.Created)
		require.Zero(t, r.Runs)
	}
	require.Equal(t, partitionNames(t, stA), partitionNames(t, stB))
}

func tableExists(t *testing.T, st *store.Store, name string) bool {
	t.Helper()
	var n int
	require.NoError(t, st.DB().QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", name).Scan(&n))
	return n > 0
}

// TestPartitionDropSurvivesACrashMidway: a day partition goes by swapping
// its rows into a scratch table (runs_retiring) and dropping that, so the
// file's deletion does not hold up the statements on runs. A replica that
// died at each step of that leaves the scratch table, full or empty, and
// maybe the emptied partition: the next cycle (any replica) finishes the
// job; no other run is touched and no scratch table stays behind.
func TestPartitionDropSurvivesACrashMidway(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.Open(t, "mysql")
	f := newFixture(t, st, "app")
	var old []int64
	for d := 0; d < 3; d++ {
		old = append(old, f.run(runSpec{group: "app", at: t0.Add(time.Duration(d)*day + time.Hour), state: kind.RunSucceeded, log: "old\n"}))
	}
	recent := f.run(runSpec{group: "app", at: t0.Add(5 * day), state: kind.RunSucceeded, log: "recent\n"})
	now := t0.Add(5*day + time.Hour)
	_, err := st.RunPartitionsEnsure(ctx, store.RunPartitionsEnsureParams{NowMs: now.UnixMilli(), AheadDays: 1})
	require.NoError(t, err)

	// Replica 1 died after swapping out 03-01's rows (the partition is empty,
	// the scratch table holds them).
	for _, q := range []string{"CREATE TABLE runs_retiring LIKE runs", "ALTER TABLE runs_retiring REMOVE PARTITIONING",
		"ALTER TABLE runs EXCHANGE PARTITION p20260301 WITH TABLE runs_retiring"} {
		_, err := st.DB().Exec(q)
		require.NoError(t, err, q)
	}
	require.False(t, f.exists(old[0]))
	// ... and a run_logs drop had got as far as creating its scratch table.
	for _, q := range []string{"CREATE TABLE run_logs_retiring LIKE run_logs", "ALTER TABLE run_logs_retiring REMOVE PARTITIONING"} {
		_, err := st.DB().Exec(q)
		require.NoError(t, err, q)
	}

	clock := clockwork.NewFakeClockAt(now)
	w := newWorker(t, st, clock, "n2", retention.Config{Runs: retention.Age(2 * day), Partitioned: true}, false)
	res, err := w.Cycle(ctx)
	require.NoError(t, err)
	require.Subset(t, res.Dropped, []string{"p20260301", "p20260302", "p20260303"}, "the emptied partition goes with the others")
	names := partitionNames(t, st)
	for _, p := range []string{"p20260301", "p20260302", "p20260303"} {
		require.NotContains(t, names, p)
	}
	for _, id := range old {
		require.False(t, f.exists(id))
		require.False(t, f.hasLog(id), "log of %d (old %v, recent %d, res %+v)", id, old, recent, res)
	}
	require.True(t, f.exists(recent))
	require.True(t, f.hasLog(recent))
	require.False(t, tableExists(t, st, "runs_retiring"), "no scratch table stays behind")
	require.False(t, tableExists(t, st, "run_logs_retiring"))

	// A run whose day is dropped after the others: the same path, cleanly.
	clock.Advance(3 * day)
	res, err = w.Cycle(ctx)
	require.NoError(t, err)
	require.Contains(t, res.Dropped, "p20260306")
	require.False(t, f.exists(recent))
	require.False(t, tableExists(t, st, "runs_retiring"))
}

// TestPostgresPartitionDropSurvivesACrashMidway: on PostgreSQL a day goes by
// DETACH PARTITION ... CONCURRENTLY, then DROP TABLE of the detached table.
// A replica that died between the two leaves that table behind: the next
// cycle (any replica) drops it, and no other run is touched.
func TestPostgresPartitionDropSurvivesACrashMidway(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.Open(t, "postgres")
	f := newFixture(t, st, "app")
	var old []int64
	for d := 0; d < 3; d++ {
		old = append(old, f.run(runSpec{group: "app", at: t0.Add(time.Duration(d)*day + time.Hour), state: kind.RunSucceeded, log: "old\n"}))
	}
	recent := f.run(runSpec{group: "app", at: t0.Add(5 * day), state: kind.RunSucceeded, log: "recent\n"})
	now := t0.Add(5*day + time.Hour)
	_, err := st.RunPartitionsEnsure(ctx, store.RunPartitionsEnsureParams{NowMs: now.UnixMilli(), AheadDays: 1})
	require.NoError(t, err)
	require.Equal(t, []string{"p20260301", "p20260302", "p20260303", "p20260304", "p20260305", "p20260306", "p20260307", "pmax"}, partitionNames(t, st))

	// Replica 1 died after detaching 03-01 (its rows are out of runs, in a
	// table of their own).
	_, err = st.DB().Exec("ALTER TABLE runs DETACH PARTITION runs_p20260301 CONCURRENTLY")
	require.NoError(t, err)
	require.False(t, f.exists(old[0]))
	require.True(t, pgTableExists(t, st, "runs_p20260301"))

	clock := clockwork.NewFakeClockAt(now)
	w := newWorker(t, st, clock, "n2", retention.Config{Runs: retention.Age(2 * day), Partitioned: true}, false)
	res, err := w.Cycle(ctx)
	require.NoError(t, err)
	require.Subset(t, res.Dropped, []string{"p20260302", "p20260303"})
	names := partitionNames(t, st)
	for _, p := range []string{"p20260301", "p20260302", "p20260303"} {
		require.NotContains(t, names, p)
		require.False(t, pgTableExists(t, st, "runs_"+p), "no detached table stays behind")
	}
	for _, id := range old {
		require.False(t, f.exists(id))
	}
	require.True(t, f.exists(recent))
	require.True(t, f.hasLog(recent))
}

func pgTableExists(t *testing.T, st *store.Store, name string) bool {
	t.Helper()
	var n int
	require.NoError(t, st.DB().QueryRow("SELECT COUNT(*) FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND relname = ?", name).Scan(&n))
	return n > 0
}
