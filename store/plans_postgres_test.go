package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/store"
)

// explainPostgres is PostgreSQL's plan of q, as text.
func explainPostgres(t *testing.T, st *store.Store, q string) string {
	t.Helper()
	rows, err := st.DB().QueryContext(context.Background(), "EXPLAIN "+q)
	require.NoError(t, err)
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var l string
		require.NoError(t, rows.Scan(&l))
		lines = append(lines, l)
	}
	require.NoError(t, rows.Err())
	return strings.Join(lines, "\n")
}

// The pre-read's due-jobs query and a replica's overdue sweep read their
// indexes on PostgreSQL too (TestDueQueryUsesIndex and
// TestOverdueSweepUsesIndex check MariaDB's plans): no scan of every job or
// run.
func TestPostgresHotQueriesUseTheirIndexes(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, "postgres")
	ctx := context.Background()
	g := mkJob(t, st, "plan", 0).GroupID
	ps := make([]store.JobCreateParams, 5000)
	for i := range ps {
		ps[i] = store.JobCreateParams{JobFields: store.JobFields{GroupID: g, Name: fmt.Sprintf("plan-%05d", i), ScheduleType: "none", TimeZone: "UTC",
			MisfirePolicy: kind.MisfireDoNothing, ShardCount: 1}, Enabled: true, NextFireMs: t0 + int64(i)*100_000, NowMs: t0}
	}
	_, err := st.JobInsertMany(ctx, ps)
	require.NoError(t, err)
	require.NoError(t, st.LockPartitionsEnsure(ctx, 4))

	j := mkJob(t, st, "sweep", t0)
	var vals []string
	for i := 0; i < 20000; i++ {
		owner := fmt.Sprintf("n%d", i%5)
		vals = append(vals, fmt.Sprintf("(%d, %d, %d, 1, 'schedule', 'scheduled', '%s', '', '', %d)", j.ID, j.GroupID, t0+int64(i)*10, owner, t0))
	}
	_, err = st.DB().ExecContext(ctx, "INSERT INTO runs (job_id, group_id, scheduled_ms, sched_fire, trigger_type, state, owner, params, message, created_ms) VALUES "+strings.Join(vals, ", "))
	require.NoError(t, err)
	_, err = st.DB().ExecContext(ctx, "ANALYZE jobs, runs")
	require.NoError(t, err)

	plan := explainPostgres(t, st, fmt.Sprintf("SELECT id FROM jobs WHERE lock_partition IN (0) AND next_fire_ms BETWEEN 1 AND %d AND enabled = 1 ORDER BY next_fire_ms LIMIT 10", t0+5000))
	require.Contains(t, plan, "jobs_due", plan)
	require.NotContains(t, plan, "Seq Scan", plan)

	// The failing jobs are read from the partial jobs_alarm_state
	// (migration 0100), which holds those jobs only.
	_, err = st.DB().ExecContext(ctx, "UPDATE jobs SET alarm_state = 'failing' WHERE id % 1000 = 0")
	require.NoError(t, err)
	_, err = st.DB().ExecContext(ctx, "ANALYZE jobs")
	require.NoError(t, err)
	failing, err := st.JobIDsFailing(ctx)
	require.NoError(t, err)
	require.Len(t, failing, 5)
	plan = explainPostgres(t, st, "SELECT id FROM jobs WHERE alarm_state = 'failing'")
	require.Contains(t, plan, "jobs_alarm_state", plan)
	require.NotContains(t, plan, "Seq Scan", plan)

	plan = explainPostgres(t, st, fmt.Sprintf("SELECT id FROM runs WHERE owner = 'n1' AND state = 'scheduled' AND scheduled_ms < %d ORDER BY scheduled_ms LIMIT 5000", t0+500))
	// The index range holds the overdue runs only (PostgreSQL may sort
	// those few, not every scheduled run of the replica).
	require.Contains(t, plan, "runs_owner_state_time", plan)
	require.Regexp(t, `Index Cond: .*scheduled_ms < `, plan)
	require.NotContains(t, plan, "Seq Scan", plan)

	// The follow-up scan reads the partial runs_followup (migration 0097),
	// in a generic plan too (followup = $1 implies followup IS NOT NULL).
	_, err = st.DB().ExecContext(ctx, "UPDATE runs SET followup = 0 WHERE id % 1000 = 0")
	require.NoError(t, err)
	_, err = st.DB().ExecContext(ctx, "ANALYZE runs")
	require.NoError(t, err)
	conn, err := st.DB().Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	for _, q := range []string{"SET plan_cache_mode = force_generic_plan",
		"PREPARE followups(smallint, text, text) AS SELECT id FROM runs WHERE followup = $1 AND state IN ($2, $3) ORDER BY id LIMIT 100"} {
		_, err = conn.ExecContext(ctx, q)
		require.NoError(t, err)
	}
	rows, err := conn.QueryContext(ctx, "EXPLAIN EXECUTE followups(0, 'failed', 'lost')")
	require.NoError(t, err)
	var lines []string
	for rows.Next() {
		var l string
		require.NoError(t, rows.Scan(&l))
		lines = append(lines, l)
	}
	require.NoError(t, rows.Err())
	plan = strings.Join(lines, "\n")
	require.Contains(t, plan, "runs_followup", plan)
	require.NotContains(t, plan, "Seq Scan", plan)

	overdue, err := st.RunTakeOver(ctx, store.RunTakeOverParams{From: "n1", To: "n1", DueBeforeMs: t0 + 500, Limit: 5000})
	require.NoError(t, err)
	require.Len(t, overdue, 10, "scheduled_ms t0+10, t0+60, ... of n1 before t0+500")
}

// A new installation is planned well from its first fires: the hand-off
// (ids from the pre-read, the owner, the state) reads its runs by primary
// key, not the replica's whole ring through runs_owner_state_time. Without
// statistics (a fresh database, before autovacuum's first round, up to a
// minute) PostgreSQL guesses that an owner and a state match few runs and
// takes the ring's index (this test fails so without pgstats.go): the
// replica's first pre-read commit analyzes runs and jobs.
func TestPostgresFreshDatabaseHandOffUsesPrimaryKey(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, "postgres")
	ctx := context.Background()
	require.NoError(t, st.LockPartitionsEnsure(ctx, 1))
	j := mkJob(t, st, "fresh", t0)
	// One replica's ring of scheduled runs, the last ones inserted by a
	// pre-read of this store.
	const n = 40000
	for b := 0; b < n-1000; b += 3000 {
		var vals []string
		for i := b; i < min(b+3000, n-1000); i++ {
			vals = append(vals, fmt.Sprintf("(%d, %d, %d, 1, 'schedule', 'scheduled', 'n1', '', '', %d)", j.ID, j.GroupID, t0+int64(i), t0))
		}
		_, err := st.DB().ExecContext(ctx, "INSERT INTO runs (job_id, group_id, scheduled_ms, sched_fire, trigger_type, state, owner, params, message, created_ms) VALUES "+strings.Join(vals, ", "))
		require.NoError(t, err)
	}
	tx, err := st.ScheduleLock(ctx, store.ScheduleLockParams{Node: "n1", Preferred: []int{0}, Max: 1, NowMs: t0})
	require.NoError(t, err)
	ins := make([]store.RunInsert, 1000)
	for i := range ins {
		ins[i] = store.RunInsert{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: t0 + int64(n-1000+i), ShardTotal: 1, TriggerType: kind.TriggerSchedule,
			State: kind.RunScheduled, Owner: "n1", CreatedMs: t0}
	}
	_, err = tx.RunInsertBatch(ctx, ins)
	require.NoError(t, err)
	require.NoError(t, tx.Commit())

	var first int64
	require.NoError(t, st.DB().QueryRowContext(ctx, "SELECT MIN(id) FROM runs").Scan(&first))
	ids := make([]string, 130)
	for i := range ids {
		ids[i] = fmt.Sprint(first + int64(n/2+i))
	}
	plan := explainPostgres(t, st, "UPDATE runs SET state = 'dispatching', handed_ms = 1, claim_token = 7 WHERE id IN ("+strings.Join(ids, ", ")+
		") AND owner = 'n1' AND handed_ms = 0 AND state IN ('scheduled', 'dispatching')")
	require.Contains(t, plan, "runs_pkey", plan)
	require.NotContains(t, plan, "runs_owner_state_time", plan)
}
