package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/store"
)

// TestJobLastOutcome runs twice: with outcomes that do not name their
// run's job (the last outcome is read from the runs written) and with
// outcomes that do (it is set from the outcomes' values when all of a
// write's outcomes applied, else read from the runs).
func TestJobLastOutcome(t *testing.T) {
	t.Parallel()
	for _, withJob := range []bool{false, true} {
		t.Run(fmt.Sprintf("job known %v", withJob), func(t *testing.T) {
			t.Parallel()
			testJobLastOutcome(t, withJob)
		})
	}
}

func testJobLastOutcome(t *testing.T, withJob bool) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		sfx := fmt.Sprintf("-%v", withJob)
		a, b, never := mkJob(t, st, "lo-a"+sfx, 0), mkJob(t, st, "lo-b"+sfx, 0), mkJob(t, st, "lo-never"+sfx, 0)
		jobOf := map[int64]int64{}
		running := func(j store.Job) int64 {
			id := mkRunning(t, st, j)
			jobOf[id] = j.ID
			return id
		}
		last := func(j store.Job) store.Job {
			t.Helper()
			got, err := st.JobGet(ctx, j.ID)
			require.NoError(t, err)
			return got
		}
		record := func(outs ...store.RunResult) {
			t.Helper()
			if withJob {
				for i := range outs {
					outs[i].JobID = jobOf[outs[i].ID]
				}
			}
			_, err := st.RunRecordOutcomes(ctx, outs)
			require.NoError(t, err)
		}
		listed := func(p store.JobListParams) []int64 {
			t.Helper()
			p.Limit = 100
			js, err := st.JobList(ctx, p)
			require.NoError(t, err)
			ids := []int64{}
			for _, j := range js {
				ids = append(ids, j.ID)
			}
			return ids
		}

		require.Equal(t, kind.RunState(""), last(a).LastOutcome, "a new job has no last outcome")
		older, newer := running(a), running(a)
		record(store.RunResult{ID: newer, State: kind.RunFailed, Code: 500, FinishedMs: t0 + 10})
		got := last(a)
		require.Equal(t, kind.RunFailed, got.LastOutcome)
		require.Equal(t, newer, got.LastRunID)
		require.Equal(t, t0+10, got.LastFinishedMs)

		record(store.RunResult{ID: older, State: kind.RunTimedOut, Code: 502, FinishedMs: t0 + 20})
		require.Equal(t, kind.RunFailed, last(a).LastOutcome, "a later outcome of an older run does not overwrite a newer run's")

		// One batch: two runs of b (the newer one wins whatever the order
		// in the batch), a run of a, and a late repeat of an ended run.
		b1, b2, a3 := running(b), running(b), running(a)
		record(
			store.RunResult{ID: b2, State: kind.RunSucceeded, Code: 200, FinishedMs: t0 + 30},
			store.RunResult{ID: b1, State: kind.RunKilled, Code: 500, FinishedMs: t0 + 31},
			store.RunResult{ID: a3, State: kind.RunLost, Code: 500, FinishedMs: t0 + 32},
			store.RunResult{ID: older, State: kind.RunSucceeded, Code: 200, FinishedMs: t0 + 33},
		)
		require.Equal(t, kind.RunSucceeded, last(b).LastOutcome)
		require.Equal(t, b2, last(b).LastRunID)
		require.Equal(t, kind.RunLost, last(a).LastOutcome)
		require.Equal(t, t0+32, last(a).LastFinishedMs)
		require.Equal(t, kind.RunState(""), last(never).LastOutcome)
		require.Equal(t, got.Version, last(a).Version, "an outcome is not an edit: If-Match keeps working")

		require.Equal(t, []int64{a.ID}, listed(store.JobListParams{LastOutcome: kind.RunLost}))
		require.Equal(t, []int64{b.ID}, listed(store.JobListParams{LastOutcome: kind.RunSucceeded, ByName: true}))
		require.Equal(t, []int64{never.ID}, listed(store.JobListParams{NeverRan: true}))
		require.Empty(t, listed(store.JobListParams{LastOutcome: kind.RunFailed}))
		require.Empty(t, listed(store.JobListParams{LastOutcome: kind.RunLost, GroupID: a.GroupID + 1000}))

		// All of one write apply: two runs of b (the newer one wins
		// whatever the order) and the older of two runs of a, whose newer
		// run ended before.
		a4, a5, b3, b4 := running(a), running(a), running(b), running(b)
		record(store.RunResult{ID: a5, State: kind.RunFailed, Code: 500, FinishedMs: t0 + 40})
		record(
			store.RunResult{ID: b4, State: kind.RunTimedOut, Code: 502, FinishedMs: t0 + 41},
			store.RunResult{ID: a4, State: kind.RunSucceeded, Code: 200, FinishedMs: t0 + 42},
			store.RunResult{ID: b3, State: kind.RunSucceeded, Code: 200, FinishedMs: t0 + 43},
		)
		require.Equal(t, kind.RunTimedOut, last(b).LastOutcome)
		require.Equal(t, b4, last(b).LastRunID)
		require.Equal(t, t0+41, last(b).LastFinishedMs)
		require.Equal(t, kind.RunFailed, last(a).LastOutcome, "an older run's outcome does not overwrite a newer run's")
		require.Equal(t, a5, last(a).LastRunID)

		// A write in which one outcome does not apply (its run ended
		// before): that outcome never becomes its job's last outcome.
		a6, b5 := running(a), running(b)
		record(store.RunResult{ID: b5, State: kind.RunFailed, Code: 500, FinishedMs: t0 + 50})
		record(
			store.RunResult{ID: b5, State: kind.RunSucceeded, Code: 200, FinishedMs: t0 + 51},
			store.RunResult{ID: a6, State: kind.RunKilled, Code: 500, FinishedMs: t0 + 52},
		)
		require.Equal(t, kind.RunFailed, last(b).LastOutcome, "an outcome that did not apply is not the last outcome")
		require.Equal(t, t0+50, last(b).LastFinishedMs)
		require.Equal(t, kind.RunKilled, last(a).LastOutcome)
		require.Equal(t, []int64{b.ID}, listed(store.JobListParams{LastOutcome: kind.RunFailed}))
		require.Equal(t, []int64{a.ID}, listed(store.JobListParams{LastOutcome: kind.RunKilled}))

		// The same with a newer run that is not dispatching or running
		// (still scheduled): its outcome does not apply, so the job keeps
		// the last outcome it had.
		sched, _, err := st.RunCreate(ctx, store.RunCreateParams{JobID: b.ID, GroupID: b.GroupID, ScheduledMs: t0, TriggerType: kind.TriggerManual,
			Owner: "n", CreatedMs: t0})
		require.NoError(t, err)
		jobOf[sched.ID] = b.ID
		a7 := running(a)
		record(
			store.RunResult{ID: sched.ID, State: kind.RunSucceeded, Code: 200, FinishedMs: t0 + 60},
			store.RunResult{ID: a7, State: kind.RunSucceeded, Code: 200, FinishedMs: t0 + 61},
		)
		require.Equal(t, kind.RunFailed, last(b).LastOutcome, "an outcome that did not apply is not the last outcome")
		require.Equal(t, b5, last(b).LastRunID)
		require.Equal(t, kind.RunSucceeded, last(a).LastOutcome)
	})
}

// With 20,000 jobs, a page filtered by last outcome reads an index in the
// order of the page (no filesort of every job with that outcome), by id and
// by name.
func TestJobLastOutcomeFilterUsesIndex(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, "mysql")
	ctx := context.Background()
	g := mkJob(t, st, "ix", 0).GroupID
	ps := make([]store.JobCreateParams, 20_000)
	for i := range ps {
		ps[i] = store.JobCreateParams{JobFields: store.JobFields{GroupID: g, Name: fmt.Sprintf("ix-%05d", i), ScheduleType: "none", TimeZone: "UTC",
			MisfirePolicy: kind.MisfireDoNothing, ShardCount: 1}, NowMs: t0}
	}
	_, err := st.JobInsertMany(ctx, ps)
	require.NoError(t, err)
	_, err = st.DB().ExecContext(ctx, "UPDATE jobs SET last_outcome = CASE WHEN id % 10 = 0 THEN 'failed' WHEN id % 10 = 1 THEN '' ELSE 'succeeded' END")
	require.NoError(t, err)
	_, err = st.DB().ExecContext(ctx, "ANALYZE TABLE jobs")
	require.NoError(t, err)
	for q, want := range map[string]string{
		"SELECT * FROM jobs WHERE last_outcome = 'succeeded' AND id > 100 ORDER BY id LIMIT 51":                                                 "jobs_outcome",
		"SELECT * FROM jobs WHERE last_outcome = 'failed' AND (name > 'ix-00100' OR (name = 'ix-00100' AND id > 0)) ORDER BY name, id LIMIT 51": "jobs_outcome_name",
	} {
		plan := explainMySQL(t, st, q)
		require.Equal(t, want, plan["key"], "plan of %s: %v", q, plan)
		require.NotContains(t, plan["Extra"], "filesort", "plan of %s: %v", q, plan)
	}
}

// A database that predates 0063 gets each job's last outcome from its
// newest finished run.
func TestJobLastOutcomeBackfill(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		ran, idle := mkJob(t, st, "bf-ran", 0), mkJob(t, st, "bf-idle", 0)
		for _, ix := range []string{"jobs_outcome", "jobs_outcome_name"} {
			drop := "DROP INDEX " + ix + " ON jobs"
			if st.Kind() != "mysql" {
				drop = "DROP INDEX " + ix
			}
			_, err := st.DB().ExecContext(ctx, drop)
			require.NoError(t, err)
		}
		for _, col := range []string{"last_outcome", "last_run_id", "last_finished_ms"} {
			_, err := st.DB().ExecContext(ctx, "ALTER TABLE jobs DROP COLUMN "+col)
			require.NoError(t, err)
		}
		_, err := st.DB().ExecContext(ctx, "DELETE FROM schema_migrations WHERE version = 63")
		require.NoError(t, err)

		insert := func(j store.Job, scheduled int64, state kind.RunState, finished int64) {
			t.Helper()
			_, err := st.DB().ExecContext(ctx, `INSERT INTO runs (job_id, group_id, scheduled_ms, trigger_type, state, owner, created_ms, finished_ms, params, message)
				VALUES (?, ?, ?, 'manual', ?, 'n', ?, ?, '', '')`, j.ID, j.GroupID, scheduled, state, scheduled, finished)
			require.NoError(t, err)
		}
		insert(ran, t0, kind.RunSucceeded, t0+5)
		insert(ran, t0+1000, kind.RunTimedOut, t0+1500)
		insert(ran, t0+2000, kind.RunRunning, 0) // not finished: not the last outcome
		insert(idle, t0+3000, kind.RunScheduled, 0)

		_, err = st.Migrate(ctx)
		require.NoError(t, err)
		got, err := st.JobGet(ctx, ran.ID)
		require.NoError(t, err)
		require.Equal(t, kind.RunTimedOut, got.LastOutcome)
		require.Equal(t, t0+1500, got.LastFinishedMs)
		got, err = st.JobGet(ctx, idle.ID)
		require.NoError(t, err)
		require.Equal(t, kind.RunState(""), got.LastOutcome)
		require.Zero(t, got.LastRunID)
	})
}

// A misfire recorded by the pre-read (misfire policy do_nothing) or by the
// dispatcher (store.RunMisfire) is a job's last outcome too, set in the
// transaction that records it.
func TestJobLastOutcomeMisfire(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		require.NoError(t, st.LockPartitionsEnsure(ctx, 1))
		due := mkJob(t, st, "misfires", t0+2000)
		tx, err := st.ScheduleLock(ctx, store.ScheduleLockParams{Node: "n1", Preferred: []int{0}, Max: 1, NowMs: t0})
		require.NoError(t, err)
		ids, err := tx.RunInsertBatch(ctx, []store.RunInsert{
			{JobID: due.ID, GroupID: due.GroupID, ScheduledMs: t0 + 1000, ShardTotal: 1, TriggerType: kind.TriggerSchedule, State: kind.RunMisfired,
				Owner: "n1", Message: "misfired", CreatedMs: t0 + 1500},
			{JobID: due.ID, GroupID: due.GroupID, ScheduledMs: t0 + 2000, ShardTotal: 1, TriggerType: kind.TriggerSchedule, State: kind.RunScheduled,
				Owner: "n1", CreatedMs: t0 + 1500},
		})
		require.NoError(t, err)
		require.NoError(t, tx.Commit())
		got, err := st.JobGet(ctx, due.ID)
		require.NoError(t, err)
		require.Equal(t, kind.RunMisfired, got.LastOutcome)
		require.Equal(t, ids[0], got.LastRunID)
		require.Equal(t, t0+1500, got.LastFinishedMs, "a misfire ended when it was recorded")

		// A scheduled run that leaves the dispatcher too late is recorded
		// misfired by RunMisfire: its job's last outcome follows.
		n, err := st.RunMisfire(ctx, "n1", []store.RunUpdate{{ID: ids[1], Message: "misfired: due 6s ago", FinishedMs: t0 + 8000}})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		got, err = st.JobGet(ctx, due.ID)
		require.NoError(t, err)
		require.Equal(t, kind.RunMisfired, got.LastOutcome)
		require.Equal(t, ids[1], got.LastRunID)
		require.Equal(t, t0+8000, got.LastFinishedMs)

		n, err = st.RunMisfire(ctx, "n1", []store.RunUpdate{{ID: ids[1], Message: "again", FinishedMs: t0 + 9000}})
		require.NoError(t, err)
		require.Zero(t, n, "a run no longer scheduled is not misfired twice")
		got, err = st.JobGet(ctx, due.ID)
		require.NoError(t, err)
		require.Equal(t, t0+8000, got.LastFinishedMs)
	})
}

// A job that fires again soon and ends the same way again is not rewritten
// by every outcome: last_outcome stays exact (the filter), last_run_id and
// last_finished_ms trail by less than 5 s of finish time, and the job's
// last planned run is always written.
func TestJobLastOutcomeTrailsRepeats(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		j := mkJob(t, st, "trail", 0)
		running := func() int64 { return mkRunning(t, st, j) }
		// planned says the pre-read has planned the job's fires up to ms
		// (it writes last_fire_ms with those fires' runs).
		planned := func(ms int64) {
			t.Helper()
			_, err := st.DB().ExecContext(ctx, "UPDATE jobs SET last_fire_ms = ? WHERE id = ?", ms, j.ID)
			require.NoError(t, err)
		}
		record := func(id int64, state kind.RunState, finished int64) {
			t.Helper()
			applied, err := st.RunRecordOutcomes(ctx, []store.RunResult{{ID: id, JobID: j.ID, State: state, Code: 200, FinishedMs: finished}})
			require.NoError(t, err)
			require.Equal(t, []bool{true}, applied)
		}
		last := func() (kind.RunState, int64, int64) {
			t.Helper()
			got, err := st.JobGet(ctx, j.ID)
			require.NoError(t, err)
			return got.LastOutcome, got.LastRunID, got.LastFinishedMs
		}
		failed := func() []store.Job {
			t.Helper()
			js, err := st.JobList(ctx, store.JobListParams{LastOutcome: kind.RunFailed, Limit: 10})
			require.NoError(t, err)
			return js
		}

		planned(t0 + 60_000)
		r1, r2, r3, r4, r5, r6 := running(), running(), running(), running(), running(), running()
		record(r1, kind.RunSucceeded, t0+1000)
		st1, id1, fin1 := last()
		require.Equal(t, kind.RunSucceeded, st1, "a first outcome is written")
		require.Equal(t, r1, id1)
		require.Equal(t, t0+1000, fin1)

		record(r2, kind.RunSucceeded, t0+5999)
		_, id, fin := last()
		require.Equal(t, r1, id, "the same outcome within 5 s, a later fire planned: the job keeps the earlier run")
		require.Equal(t, t0+1000, fin)

		record(r3, kind.RunFailed, t0+6500)
		st3, id, fin := last()
		require.Equal(t, kind.RunFailed, st3, "a changed outcome is always written")
		require.Equal(t, r3, id)
		require.Equal(t, t0+6500, fin)
		require.Len(t, failed(), 1, "the last-outcome filter sees the change at once")

		record(r4, kind.RunFailed, t0+11_500)
		_, id, _ = last()
		require.Equal(t, r4, id, "5 s or more after the recorded finish: written")

		record(r5, kind.RunFailed, t0+12_000)
		_, id, _ = last()
		require.Equal(t, r4, id)

		// The job stopped firing: nothing is planned after this outcome.
		planned(t0 + 12_000)
		record(r6, kind.RunFailed, t0+12_500)
		st6, id, fin := last()
		require.Equal(t, kind.RunFailed, st6)
		require.Equal(t, r6, id, "with no later fire planned, the run is written: the job's last run is never left out")
		require.Equal(t, t0+12_500, fin)
	})
}
