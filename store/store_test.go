package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/store"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

const t0 = int64(1_800_000_000_000) // a fixed epoch ms

func mkJob(t *testing.T, st *store.Store, name string, next int64) store.Job {
	t.Helper()
	ctx := context.Background()
	gs, _ := st.GroupList(ctx)
	var gid int64
	if len(gs) == 0 {
		g, err := st.GroupCreate(ctx, store.GroupCreateParams{AppName: "g", Members: []string{"rec://a"}, NowMs: t0})
		require.NoError(t, err)
		gid = g.ID
	} else {
		gid = gs[0].ID
	}
	// Tests make many jobs from one name; job names are unique in a group,
	// so a taken name gets a numeric suffix.
	var j store.Job
	var err error
	for n := 0; ; n++ {
		jname := name
		if n > 0 {
			jname = fmt.Sprintf("%s-%d", name, n)
		}
		j, err = st.JobCreate(ctx, store.JobCreateParams{JobFields: store.JobFields{GroupID: gid, Name: jname, ScheduleType: "cron",
			ScheduleConf: "* * * * * ?", TimeZone: "UTC", MisfirePolicy: kind.MisfireDoNothing, ShardCount: 1},
			Enabled: true, NextFireMs: next, NowMs: t0})
		if !errors.Is(err, store.ErrConflict) {
			break
		}
	}
	require.NoError(t, err)
	return j
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		applied, err := st.Migrate(ctx)
		require.NoError(t, err)
		require.Empty(t, applied, "second migrate applies nothing")
		pending, err := st.MigrationsPending(ctx)
		require.NoError(t, err)
		require.Zero(t, pending)
	})
}

func TestGroupsAndJobs(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		g, err := st.GroupCreate(ctx, store.GroupCreateParams{AppName: "billing", Title: "Billing", Members: []string{"local://a", "http://h:1"}, NowMs: t0})
		require.NoError(t, err)
		require.Equal(t, []string{"local://a", "http://h:1"}, g.Members)
		_, err = st.GroupCreate(ctx, store.GroupCreateParams{AppName: "billing", NowMs: t0})
		require.ErrorIs(t, err, store.ErrConflict)

		j := mkJob(t, st, "x'; DROP TABLE jobs; --", t0+1000)
		got, err := st.JobGet(ctx, j.ID)
		require.NoError(t, err)
		require.Equal(t, "x'; DROP TABLE jobs; --", got.Name)
		require.True(t, got.Enabled)
		require.Equal(t, t0+1000, got.NextFireMs)

		require.NoError(t, st.JobSetEnabled(ctx, store.JobSetEnabledParams{ID: j.ID, Enabled: false, NowMs: t0}))
		got, _ = st.JobGet(ctx, j.ID)
		require.False(t, got.Enabled)
		require.Zero(t, got.NextFireMs, "a stopped job has no next fire")

		list, err := st.JobList(ctx, store.JobListParams{Name: "DROP", Limit: 10})
		require.NoError(t, err)
		require.Len(t, list, 1)
		list, err = st.JobList(ctx, store.JobListParams{Name: "%", Limit: 10})
		require.NoError(t, err)
		require.Empty(t, list, "LIKE wildcards in a name filter are literal")

		require.ErrorIs(t, st.GroupDelete(ctx, g.ID), store.ErrConflict, "a group with jobs cannot be deleted")
		require.NoError(t, st.JobDelete(ctx, j.ID))
		_, err = st.JobGet(ctx, j.ID)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.ErrorIs(t, st.JobDelete(ctx, j.ID), store.ErrNotFound)
	})
}

// The due jobs are read earliest first up to the limit, whatever number
// the caller expected: fewer (the result grows) or more (it is still capped).
func TestJobListDueReadsUpToTheLimitWhateverExpected(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		require.NoError(t, st.LockPartitionsEnsure(ctx, 1))
		var ids []int64
		for i := range 40 {
			ids = append(ids, mkJob(t, st, fmt.Sprintf("due-%02d", i), t0+1000+int64(i)).ID)
		}
		tx, err := st.ScheduleLock(ctx, store.ScheduleLockParams{Node: "n1", Preferred: []int{0}, Max: 1, NowMs: t0})
		require.NoError(t, err)
		defer tx.Rollback()
		for _, expect := range []int{0, 2, 30, 1000} {
			jobs, err := tx.JobListDue(ctx, store.JobListDueParams{UntilMs: t0 + 5000, Limit: 30, Expect: expect})
			require.NoError(t, err)
			got := make([]int64, len(jobs))
			for i, j := range jobs {
				got[i] = j.ID
			}
			require.Equal(t, ids[:30], got, "expect %d", expect)
		}
	})
}

func TestScheduleTxInsertsAdvancesAndCommits(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		require.NoError(t, st.LockPartitionsEnsure(ctx, 1))
		due := mkJob(t, st, "due", t0+2000)
		later := mkJob(t, st, "later", t0+60_000)

		tx, err := st.ScheduleLock(ctx, store.ScheduleLockParams{Node: "n1", Preferred: []int{0}, Max: 1, NowMs: t0})
		require.NoError(t, err)
		require.Equal(t, []int{0}, tx.Held())
		jobs, err := tx.JobListDue(ctx, store.JobListDueParams{UntilMs: t0 + 5000, Limit: 5000})
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		require.Equal(t, due.ID, jobs[0].ID)
		require.Less(t, cap(jobs), 100, "sized for what is expected, not for the limit: a job is about 480 bytes")

		var ins []store.RunInsert
		for i := int64(0); i < 3; i++ {
			ins = append(ins, store.RunInsert{JobID: due.ID, GroupID: due.GroupID, ScheduledMs: t0 + 2000 + i*1000, ShardTotal: 1,
				TriggerType: kind.TriggerSchedule, State: kind.RunScheduled, Owner: "n1", CreatedMs: t0})
		}
		ids, err := tx.RunInsertBatch(ctx, ins)
		require.NoError(t, err)
		require.Len(t, ids, 3)
		require.NoError(t, tx.JobAdvanceBatch(ctx, []store.JobAdvance{{ID: due.ID, NextFireMs: t0 + 5000, LastFireMs: t0 + 4000}}))
		require.NoError(t, tx.Commit())

		for i, id := range ids {
			r, err := st.RunGet(ctx, id)
			require.NoError(t, err)
			require.Equal(t, t0+2000+int64(i)*1000, r.ScheduledMs)
			require.Equal(t, kind.RunScheduled, r.State)
		}
		got, _ := st.JobGet(ctx, due.ID)
		require.Equal(t, t0+5000, got.NextFireMs)
		require.Equal(t, t0+4000, got.LastFireMs)
		got, _ = st.JobGet(ctx, later.ID)
		require.Equal(t, t0+60_000, got.NextFireMs)

		// The same fire again violates the fire key: the whole batch fails and rolls back.
		tx, err = st.ScheduleLock(ctx, store.ScheduleLockParams{Node: "n1", Preferred: []int{0}, Max: 1, NowMs: t0})
		require.NoError(t, err)
		_, err = tx.RunInsertBatch(ctx, ins[:1])
		require.Error(t, err)
		tx.Rollback()
	})
}

func TestScheduleLockSkipsLockedPartitions(t *testing.T) {
	t.Parallel()
	storetest.EachServer(t, testScheduleLockSkipsLockedPartitions)
}

func testScheduleLockSkipsLockedPartitions(t *testing.T, st *store.Store) {
	ctx := context.Background()
	require.NoError(t, st.LockPartitionsEnsure(ctx, 4))
	a, err := st.ScheduleLock(ctx, store.ScheduleLockParams{Node: "a", Preferred: []int{0, 1, 2, 3}, Max: 2, NowMs: t0})
	require.NoError(t, err)
	require.Equal(t, []int{0, 1}, a.Held())
	b, err := st.ScheduleLock(ctx, store.ScheduleLockParams{Node: "b", Preferred: []int{0, 1, 2, 3}, Max: 4, NowMs: t0})
	require.NoError(t, err)
	require.Equal(t, []int{2, 3}, b.Held(), "SKIP LOCKED: b gets only what a does not hold")
	c, err := st.ScheduleLock(ctx, store.ScheduleLockParams{Node: "c", Preferred: []int{0, 1, 2, 3}, Max: 4, NowMs: t0})
	require.NoError(t, err)
	require.Empty(t, c.Held())
	c.Rollback()
	a.Rollback()
	b.Rollback()
}

func TestDueQueryUsesIndex(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, "mysql")
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		mkJob(t, st, "j", t0+int64(i)*100_000)
	}
	_, err := st.DB().ExecContext(ctx, "ANALYZE TABLE jobs")
	require.NoError(t, err)
	plan := explainMySQL(t, st, "SELECT id FROM jobs WHERE lock_partition IN (0) AND next_fire_ms BETWEEN 1 AND ? AND enabled = 1 ORDER BY next_fire_ms LIMIT 10", t0+5000)
	require.Equal(t, "jobs_due", plan["key"], "plan: %v", plan)
}

func TestClaimIsCompareAndSet(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		j := mkJob(t, st, "j", t0)
		var ids []int64
		for i := 0; i < 5; i++ {
			r, created, err := st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: t0 + int64(i)*1000,
				SchedFire: true, TriggerType: kind.TriggerSchedule, Owner: "n1", CreatedMs: t0})
			require.NoError(t, err)
			require.True(t, created)
			ids = append(ids, r.ID)
		}
		got, err := st.RunClaimBatch(ctx, store.RunClaimParams{IDs: ids, Owner: "n2", NowMs: t0})
		require.NoError(t, err)
		require.Empty(t, got, "a node cannot claim runs it does not own")

		// Concurrent claimers: every run is claimed exactly once.
		var wg sync.WaitGroup
		var mu sync.Mutex
		seen := map[int64]int{}
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := st.RunClaimBatch(ctx, store.RunClaimParams{IDs: ids, Owner: "n1", NowMs: t0 + 5000, LateAfterMs: 1000})
				require.NoError(t, err)
				mu.Lock()
				for _, id := range c {
					seen[id]++
				}
				mu.Unlock()
			}()
		}
		wg.Wait()
		require.Len(t, seen, 5)
		for id, n := range seen {
			require.Equal(t, 1, n, "run %d claimed %d times", id, n)
		}
		r0, _ := st.RunGet(ctx, ids[0])
		require.True(t, r0.Late, "claimed 5 s after its time: late")
		r4, _ := st.RunGet(ctx, ids[4])
		require.False(t, r4.Late)
		require.Equal(t, kind.RunDispatching, r4.State)

		// Guarded batch updates: accepted only from dispatching; first outcome wins.
		n, err := st.RunUpdateBatch(ctx, store.RunUpdateBatchParams{FromStates: []kind.RunState{kind.RunDispatching},
			Updates: []store.RunUpdate{{ID: ids[0], State: kind.RunRunning, Target: "rec://a"}, {ID: ids[1], State: kind.RunRunning}}})
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
		ok, err := st.RunRecordOutcomes(ctx, []store.RunResult{{ID: ids[0], State: kind.RunSucceeded, Code: 200, Message: "ok", FinishedMs: t0 + 6000, Source: store.SourceCallback}})
		require.NoError(t, err)
		require.Equal(t, []bool{true}, ok)
		ok, err = st.RunRecordOutcomes(ctx, []store.RunResult{{ID: ids[0], State: kind.RunFailed, Code: 500, FinishedMs: t0 + 7000, Source: store.SourceCallback}})
		require.NoError(t, err)
		require.Equal(t, []bool{false}, ok, "second outcome ignored")
		n, err = st.RunUpdateBatch(ctx, store.RunUpdateBatchParams{FromStates: []kind.RunState{kind.RunDispatching},
			Updates: []store.RunUpdate{{ID: ids[0], State: kind.RunRunning}}})
		require.NoError(t, err)
		require.Zero(t, n, "a late 'accepted' write does not undo an outcome")
		r, _ := st.RunGet(ctx, ids[0])
		require.Equal(t, kind.RunSucceeded, r.State)
		require.Equal(t, "rec://a", r.Target)
		require.Equal(t, "ok", r.Message)
	})
}

func TestTakeOverAndLost(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		j := mkJob(t, st, "j", t0)
		var ids []int64
		for i := 0; i < 4; i++ {
			r, _, err := st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: t0 + int64(i)*1000,
				SchedFire: true, TriggerType: kind.TriggerSchedule, Owner: "dead", CreatedMs: t0})
			require.NoError(t, err)
			ids = append(ids, r.ID)
		}
		// Run 0 was claimed and handed to its target: it may have arrived,
		// so it is lost. Run 1 was claimed but never handed: a survivor
		// takes it over and sends it.
		claimed, err := st.RunClaimBatch(ctx, store.RunClaimParams{IDs: ids[:2], Owner: "dead", NowMs: t0})
		require.NoError(t, err)
		require.Len(t, claimed, 2)
		handed, err := st.RunHandOff(ctx, store.RunHandOffParams{Owner: "dead", IDs: ids[:1], NowMs: t0 + 1})
		require.NoError(t, err)
		require.Equal(t, ids[:1], handed)

		unanswered, err := st.RunListHandedUnanswered(ctx, "dead", 0)
		require.NoError(t, err)
		require.Equal(t, ids[:1], unanswered)
		applied, err := st.RunRecordOutcomes(ctx, []store.RunResult{{ID: ids[0], State: kind.RunLost, Code: 500, Message: "gone",
			FinishedMs: t0, Source: store.SourceLost, OnlyDispatching: true}})
		require.NoError(t, err)
		require.Equal(t, []bool{true}, applied)
		lostRun, err := st.RunGet(ctx, ids[0])
		require.NoError(t, err)
		require.Equal(t, kind.RunLost, lostRun.State)

		sent, err := st.RunTakeOver(ctx, store.RunTakeOverParams{From: "dead", To: "s0", Claimed: true, Limit: 100})
		require.NoError(t, err)
		require.Len(t, sent, 1)
		require.Equal(t, ids[1], sent[0].ID)
		require.Equal(t, kind.RunDispatching, sent[0].State)
		again, err := st.RunHandOff(ctx, store.RunHandOffParams{Owner: "dead", IDs: ids[1:2], NowMs: t0 + 2})
		require.NoError(t, err)
		require.Empty(t, again, "the dead owner can no longer hand off a run taken over from it")
		mine, err := st.RunHandOff(ctx, store.RunHandOffParams{Owner: "s0", IDs: ids[1:2], NowMs: t0 + 2})
		require.NoError(t, err)
		require.Equal(t, ids[1:2], mine)
		twice, err := st.RunHandOff(ctx, store.RunHandOffParams{Owner: "s0", IDs: ids[1:2], NowMs: t0 + 3})
		require.NoError(t, err)
		require.Empty(t, twice, "a run is handed off once")

		var wg sync.WaitGroup
		var mu sync.Mutex
		taken := map[int64]string{}
		for _, node := range []string{"s1", "s2", "s3"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runs, err := st.RunTakeOver(ctx, store.RunTakeOverParams{From: "dead", To: node, Limit: 100})
				require.NoError(t, err)
				mu.Lock()
				defer mu.Unlock()
				for _, r := range runs {
					_, dup := taken[r.ID]
					require.False(t, dup, "run %d taken twice", r.ID)
					taken[r.ID] = node
				}
			}()
		}
		wg.Wait()
		require.Len(t, taken, 2)
	})
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		j := mkJob(t, st, "j", t0)
		p := store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: t0, TriggerType: kind.TriggerManual, Owner: "n", IdempotencyKey: "k1", CreatedMs: t0}
		a, created, err := st.RunCreate(ctx, p)
		require.NoError(t, err)
		require.True(t, created)
		b, created, err := st.RunCreate(ctx, p)
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, a.ID, b.ID)
		p.IdempotencyKey = ""
		c, created, err := st.RunCreate(ctx, p)
		require.NoError(t, err)
		require.True(t, created, "manual runs without a key may share a millisecond")
		d, created, err := st.RunCreate(ctx, p)
		require.NoError(t, err)
		require.True(t, created)
		require.NotEqual(t, c.ID, d.ID)

		// Concurrent requests with one key make one run (the key is claimed
		// in run_keys inside the run's transaction).
		p.IdempotencyKey = "k-race"
		var wg sync.WaitGroup
		ids := make([]int64, 8)
		made := make([]bool, 8)
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, c, err := st.RunCreate(ctx, p)
				require.NoError(t, err)
				ids[i], made[i] = r.ID, c
			}()
		}
		wg.Wait()
		n := 0
		for i := range ids {
			require.Equal(t, ids[0], ids[i])
			if made[i] {
				n++
			}
		}
		require.Equal(t, 1, n, "exactly one request creates the run")
	})
}

func TestRunLogs(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		j := mkJob(t, st, "j", t0)
		r, _, err := st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: t0, TriggerType: kind.TriggerManual, Owner: "n", CreatedMs: t0})
		require.NoError(t, err)
		require.NoError(t, st.RunLogAppend(ctx, r.ID, "one\ntwo\n"))
		require.NoError(t, st.RunLogAppend(ctx, r.ID, "three"))
		c, err := st.RunLogRead(ctx, r.ID, 1)
		require.NoError(t, err)
		require.Equal(t, "one\ntwo\nthree\n", c.Content)
		require.Equal(t, 3, c.ToLine)
		require.False(t, c.Finished)
		c, err = st.RunLogRead(ctx, r.ID, 2)
		require.NoError(t, err)
		require.Equal(t, "two\nthree\n", c.Content)
		c, err = st.RunLogRead(ctx, r.ID, 4)
		require.NoError(t, err)
		require.Equal(t, "", c.Content)
		require.Zero(t, c.ToLine)
		_, err = st.RunLogRead(ctx, 999999, 1)
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestNodes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		require.NoError(t, st.NodeHeartbeat(ctx, store.NodeHeartbeatParams{ID: "a", Host: "h", NowMs: t0}))
		require.NoError(t, st.NodeHeartbeat(ctx, store.NodeHeartbeatParams{ID: "a", Host: "h", NowMs: t0 + 1000}))
		ns, err := st.NodeList(ctx)
		require.NoError(t, err)
		require.Len(t, ns, 1)
		require.Equal(t, t0+1000, ns[0].HeartbeatMs)
		require.Equal(t, t0, ns[0].StartedMs)
		require.NoError(t, st.NodeStop(ctx, "a", t0+2000))
		ns, _ = st.NodeList(ctx)
		require.Equal(t, t0+2000, ns[0].StoppedMs)
	})
}

func TestLivenessLockFreedWhenConnectionDies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, dialect := range storetest.Servers {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			dsn, open := dbtest.MySQL, store.OpenMySQL
			if dialect == "postgres" {
				dsn, open = dbtest.Postgres, store.OpenPostgres
			}
			db := dsn(t)
			a, err := open(ctx, db)
			require.NoError(t, err)
			b, err := open(ctx, db)
			require.NoError(t, err)
			livenessLockFreedWhenConnectionDies(t, a, b)
		})
	}
}

func livenessLockFreedWhenConnectionDies(t *testing.T, a, b *store.Store) {
	ctx := context.Background()
	defer b.Close()
	lv, err := a.NodeLivenessAcquire(ctx, "node-a")
	require.NoError(t, err)
	defer lv.Release(ctx) // closes the lock's connection, dead by then
	free, err := b.NodeLockFree(ctx, "node-a")
	require.NoError(t, err)
	require.False(t, free)
	defer a.Close()
	// The process "dies": the server drops its connection (NodeFence ends
	// the session that holds the lock, as for a paused node).
	killed, err := b.NodeFence(ctx, "node-a")
	require.NoError(t, err)
	require.True(t, killed)
	require.Eventually(t, func() bool {
		free, err := b.NodeLockFree(ctx, "node-a")
		return err == nil && free
	}, 10*time.Second, 20*time.Millisecond)
}

func TestOpenURL(t *testing.T) {
	t.Parallel()
	_, err := store.Open(context.Background(), "oracle://x")
	require.ErrorContains(t, err, "want sqlite://PATH, mysql://")
	for _, u := range []string{"mysql://root:secret@127.0.0.1:1/x", "postgres://root:secret@127.0.0.1:1/x", "postgresql://root:secret@127.0.0.1:1/x"} {
		_, err = store.Open(context.Background(), u)
		require.Error(t, err)
		require.False(t, strings.Contains(err.Error(), "secret"), "password must not leak into errors: %v", err)
	}
}

// TestSQLiteFilesArePrivate: the database, its WAL and shared memory are
// created 0600 in a 0700 directory, and an old world-readable file is
// narrowed when opened.
func TestSQLiteFilesArePrivate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "ringjob.db")
	st, err := store.OpenSQLite(ctx, path)
	require.NoError(t, err)
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600, path + "-wal": 0o600, path + "-shm": 0o600} {
		fi, err := os.Stat(p)
		require.NoError(t, err, p)
		require.Equal(t, want, fi.Mode().Perm(), p)
	}
	require.NoError(t, st.Close())

	require.NoError(t, os.Chmod(path, 0o644))
	st, err = store.OpenSQLite(ctx, path)
	require.NoError(t, err)
	defer st.Close()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "narrowed at open")
}

// The sweep of a replica's overdue scheduled runs reads only those, oldest
// first, from runs_owner_state_time: not every scheduled run of the replica
// (a whole pre-read window at 10,000 jobs) followed by a sort.
func TestOverdueSweepUsesIndex(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, "mysql")
	ctx := context.Background()
	j := mkJob(t, st, "sweep", t0)
	var vals []string
	for i := 0; i < 5000; i++ {
		owner := "n1"
		if i%5 == 0 {
			owner = "n2"
		}
		vals = append(vals, fmt.Sprintf("(%d, %d, %d, 1, 'schedule', 'scheduled', '%s', '', '', %d)", j.ID, j.GroupID, t0+int64(i)*10, owner, t0))
	}
	_, err := st.DB().ExecContext(ctx, "INSERT INTO runs (job_id, group_id, scheduled_ms, sched_fire, trigger_type, state, owner, params, message, created_ms) VALUES "+strings.Join(vals, ", "))
	require.NoError(t, err)
	_, err = st.DB().ExecContext(ctx, "ANALYZE TABLE runs")
	require.NoError(t, err)
	// The store's own query (RunTakeOver) names live = 1 and both values
	// of kill_requested, so the index (migration 0101) bounds scheduled_ms:
	// it reads the 40 overdue runs, not n1's 4,000.
	plan := explainMySQL(t, st, "SELECT id FROM runs WHERE live = 1 AND kill_requested IN (0, 1) AND owner = 'n1' AND state = 'scheduled' AND scheduled_ms < ? ORDER BY scheduled_ms LIMIT 5000", t0+500)
	require.Equal(t, "runs_owner_live", plan["key"], "plan: %v", plan)
	require.Equal(t, "range", plan["type"], "plan: %v", plan)
	rows, err := strconv.Atoi(plan["rows"])
	require.NoError(t, err, "plan: %v", plan)
	require.Less(t, rows, 200, "plan: %v", plan)
	// The kill poll (RunListKillRequested) reads only the runs with a kill
	// requested.
	plan = explainMySQL(t, st, "SELECT id FROM runs WHERE live = 1 AND kill_requested IN (0, 1) AND owner = 'n1' AND state IN ('dispatching', 'running') AND kill_requested = 1")
	require.Equal(t, "runs_owner_live", plan["key"], "plan: %v", plan)
	rows, err = strconv.Atoi(plan["rows"])
	require.NoError(t, err, "plan: %v", plan)
	require.Less(t, rows, 10, "plan: %v", plan)

	overdue, err := st.RunTakeOver(ctx, store.RunTakeOverParams{From: "n1", To: "n1", DueBeforeMs: t0 + 500, Limit: 5000})
	require.NoError(t, err)
	require.Len(t, overdue, 40, "scheduled_ms t0, t0+10, ... t0+490, less every fifth (n2's)")
}

// The hand-off claims a scheduled run and records where it goes, in one
// statement; a run taken over (another owner) or handed already is not
// handed again, and a run without a target keeps the recorded one.
func TestHandOffClaimsAndRecordsTheTarget(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		j := mkJob(t, st, "handoff", t0)
		var ids []int64
		for i := 0; i < 3; i++ {
			r, _, err := st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: t0 + int64(i)*1000,
				SchedFire: true, TriggerType: kind.TriggerSchedule, Owner: "n1", CreatedMs: t0})
			require.NoError(t, err)
			ids = append(ids, r.ID)
		}
		handed, err := st.RunHandOff(ctx, store.RunHandOffParams{Owner: "n1", IDs: ids[:2], NowMs: t0 + 1500, LateAfterMs: 1000,
			Targets: map[int64]string{ids[0]: "http://a:9999"}})
		require.NoError(t, err)
		require.ElementsMatch(t, ids[:2], handed)
		a, err := st.RunGet(ctx, ids[0])
		require.NoError(t, err)
		require.Equal(t, kind.RunDispatching, a.State)
		require.Equal(t, "http://a:9999", a.Target)
		require.Equal(t, t0+1500, a.HandedMs)
		require.Equal(t, t0+1500, a.DispatchedMs)
		require.True(t, a.Late, "handed 1.5 s after its time, late after 1 s")
		b, err := st.RunGet(ctx, ids[1])
		require.NoError(t, err)
		require.Equal(t, "", b.Target)
		require.False(t, b.Late, "handed 0.5 s after its time")

		again, err := st.RunHandOff(ctx, store.RunHandOffParams{Owner: "n1", IDs: ids, NowMs: t0 + 3000, Targets: map[int64]string{ids[0]: "http://b:9999"}})
		require.NoError(t, err)
		require.Equal(t, ids[2:], again, "a run is handed once")
		a, err = st.RunGet(ctx, ids[0])
		require.NoError(t, err)
		require.Equal(t, "http://a:9999", a.Target, "a refused hand-off changes nothing")
		other, err := st.RunHandOff(ctx, store.RunHandOffParams{Owner: "n2", IDs: ids, NowMs: t0 + 3000})
		require.NoError(t, err)
		require.Empty(t, other, "only the owner hands its runs off")
	})
}

// A hand-off whose answer was lost (the connection dropped after the
// commit) is asked again naming its token: the run it handed, never sent,
// is handed to its owner then, once; a token that handed nothing, or a
// run that has an outcome meanwhile, gives nothing.
func TestHandOffAskedAgainAfterALostAnswer(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		j := mkJob(t, st, "handoff-again", t0)
		var ids []int64
		for i := 0; i < 3; i++ {
			r, _, err := st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: t0 + int64(i)*1000,
				SchedFire: true, TriggerType: kind.TriggerSchedule, Owner: "n1", CreatedMs: t0})
			require.NoError(t, err)
			ids = append(ids, r.ID)
		}
		lost := store.NewClaimToken()
		handed, err := st.RunHandOff(ctx, store.RunHandOffParams{Owner: "n1", IDs: ids[:2], NowMs: t0 + 100, Token: lost})
		require.NoError(t, err)
		require.ElementsMatch(t, ids[:2], handed, "applied, but say its answer never arrived")

		again, err := st.RunHandOff(ctx, store.RunHandOffParams{Owner: "n1", IDs: ids, NowMs: t0 + 3000})
		require.NoError(t, err)
		require.Equal(t, ids[2:], again, "without the lost token, a handed run is refused")

		_, err = st.RunSetState(ctx, ids[1], kind.RunDispatching, kind.RunMisfired, "decided meanwhile", t0+3000)
		require.NoError(t, err)
		prior := map[int64][]int64{ids[0]: {store.NewClaimToken(), lost}, ids[1]: {lost}}
		again, err = st.RunHandOff(ctx, store.RunHandOffParams{Owner: "n1", IDs: ids[:2], NowMs: t0 + 4000, Prior: prior})
		require.NoError(t, err)
		require.Equal(t, ids[:1], again, "the run the lost hand-off handed, still dispatching, is handed now")
		other, err := st.RunHandOff(ctx, store.RunHandOffParams{Owner: "n2", IDs: ids[:1], NowMs: t0 + 4000, Prior: prior})
		require.NoError(t, err)
		require.Empty(t, other, "only its owner")
		none, err := st.RunHandOff(ctx, store.RunHandOffParams{Owner: "n1", IDs: ids[:1], NowMs: t0 + 4000, Prior: map[int64][]int64{ids[0]: {store.NewClaimToken()}}})
		require.NoError(t, err)
		require.Empty(t, none, "a token that handed nothing")
	})
}

// A run inserted by the pre-read reserves room in its row for its hand-off
// (MySQL/MariaDB: spaces in handoff_room, capped at MaxHandoffRoom), and
// every write that moves it out of scheduled gives the room back: the
// hand-off, which writes the target and the longer state, leaves the row no
// longer than it was inserted (a row that grows splits its full page). A
// recorded misfire reserves nothing. SQLite reserves nothing.
func TestHandOffGivesBackTheRoomReservedAtInsert(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		require.NoError(t, st.LockPartitionsEnsure(ctx, 1))
		j := mkJob(t, st, "room", t0)
		tx, err := st.ScheduleLock(ctx, store.ScheduleLockParams{Node: "n1", Preferred: []int{0}, Max: 1, NowMs: t0})
		require.NoError(t, err)
		var ins []store.RunInsert
		for i, room := range []int{30, 30, 30, 400} {
			ins = append(ins, store.RunInsert{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: t0 + int64(i)*1000, ShardTotal: 1,
				TriggerType: kind.TriggerSchedule, State: kind.RunScheduled, Owner: "n1", CreatedMs: t0, HandoffRoom: room})
		}
		ins = append(ins, store.RunInsert{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: t0 + 9000, ShardTotal: 1,
			TriggerType: kind.TriggerSchedule, State: kind.RunMisfired, Owner: "n1", CreatedMs: t0, Message: "misfired", HandoffRoom: 30})
		ids, err := tx.RunInsertBatch(ctx, ins)
		require.NoError(t, err)
		require.NoError(t, tx.Commit())

		mysql := st.Kind() == "mysql"
		rowLen := func(id int64) (room, total int) {
			t.Helper()
			require.NoError(t, st.DB().QueryRowContext(ctx,
				"SELECT LENGTH(handoff_room), LENGTH(handoff_room) + LENGTH(target) + LENGTH(state) FROM runs WHERE id = ?", id).Scan(&room, &total))
			return room, total
		}
		want := func(n int) int {
			if mysql {
				return n
			}
			return 0
		}
		room, before := rowLen(ids[0])
		require.Equal(t, want(30), room)
		room, _ = rowLen(ids[3])
		require.Equal(t, want(store.MaxHandoffRoom), room, "capped")
		room, _ = rowLen(ids[4])
		require.Zero(t, room, "a recorded misfire is never handed off")

		handed, err := st.RunHandOff(ctx, store.RunHandOffParams{Owner: "n1", IDs: ids[:1], NowMs: t0 + 100, LateAfterMs: 1000,
			Targets: map[int64]string{ids[0]: "http://10.0.0.1:9999/"}})
		require.NoError(t, err)
		require.Equal(t, ids[:1], handed)
		room, after := rowLen(ids[0])
		require.Zero(t, room, "the hand-off gives the room back")
		if mysql {
			require.LessOrEqual(t, after, before, "the hand-off's target and state fit in the room")
		}
		r, err := st.RunGet(ctx, ids[0])
		require.NoError(t, err)
		require.Equal(t, "http://10.0.0.1:9999/", r.Target)
		require.Equal(t, kind.RunDispatching, r.State)

		n, err := st.RunMisfire(ctx, "n1", []store.RunUpdate{{ID: ids[1], Message: "misfired at dispatch", FinishedMs: t0 + 2000}})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		room, _ = rowLen(ids[1])
		require.Zero(t, room, "a misfire gives the room back")

		claimed, err := st.RunClaimBatch(ctx, store.RunClaimParams{IDs: ids[2:3], Owner: "n1", NowMs: t0 + 2000, LateAfterMs: 1000})
		require.NoError(t, err)
		require.Equal(t, ids[2:3], claimed)
		room, _ = rowLen(ids[2])
		require.Zero(t, room, "a claim (a run that fails before its send) gives the room back")
	})
}

// A schedule fire created again finds the run made first, also inside a
// transaction, which goes on (PostgreSQL ends a transaction at its first
// failed statement, so the duplicate must not fail there).
func TestDuplicateFireInATransactionFindsTheFirstRun(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		j := mkJob(t, st, "dup", t0)
		fire := store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: t0, SchedFire: true,
			TriggerType: kind.TriggerSchedule, Owner: "n1", CreatedMs: t0}
		first, created, err := st.RunCreate(ctx, fire)
		require.NoError(t, err)
		require.True(t, created)
		again, created, err := st.RunCreate(ctx, fire)
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, first.ID, again.ID)
		require.NoError(t, st.Tx(ctx, func(tx *store.Store) error {
			again, created, err := tx.RunCreate(ctx, fire)
			if err != nil {
				return err
			}
			require.False(t, created)
			require.Equal(t, first.ID, again.ID)
			return tx.NodeHeartbeat(ctx, store.NodeHeartbeatParams{ID: "n1", Host: "h", NowMs: t0})
		}), "the transaction goes on after the duplicate")
	})
}

// mkRunning makes a manual run of j and claims it: a run whose outcome may
// be recorded.
func mkRunning(t *testing.T, st *store.Store, j store.Job) int64 {
	t.Helper()
	ctx := context.Background()
	r, _, err := st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: t0, TriggerType: kind.TriggerManual,
		Owner: "n", CreatedMs: t0})
	require.NoError(t, err)
	_, err = st.RunClaimBatch(ctx, store.RunClaimParams{IDs: []int64{r.ID}, Owner: "n", NowMs: t0})
	require.NoError(t, err)
	return r.ID
}

// explainMySQL returns the first row of MySQL's EXPLAIN of query.
func explainMySQL(t *testing.T, st *store.Store, query string, args ...any) map[string]string {
	t.Helper()
	rows, err := st.DB().QueryContext(context.Background(), "EXPLAIN "+query, args...)
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	require.True(t, rows.Next())
	vs := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vs {
		ptrs[i] = &vs[i]
	}
	require.NoError(t, rows.Scan(ptrs...))
	plan := map[string]string{}
	for i, c := range cols {
		if b, ok := vs[i].([]byte); ok {
			plan[c] = string(b)
		}
	}
	return plan
}
