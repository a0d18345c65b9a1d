package store

import (
	"context"
	"database/sql"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/kind"
)

var pgPartitionScanRe = regexp.MustCompile(`on (runs_p[0-9]+|runs_pmax)`)

// pgRunsPartitionsRead are the partitions of runs PostgreSQL's plan of st
// reads (EXPLAIN with the statement's own arguments: plan-time pruning).
func pgRunsPartitionsRead(t *testing.T, db *sql.DB, st recorded) []string {
	t.Helper()
	rows, err := db.Query("EXPLAIN "+st.q, st.args...)
	require.NoError(t, err, st.q)
	defer rows.Close()
	seen := map[string]bool{}
	for rows.Next() {
		var line string
		require.NoError(t, rows.Scan(&line))
		for _, m := range pgPartitionScanRe.FindAllStringSubmatch(line, -1) {
			seen[strings.TrimPrefix(m[1], "runs_")] = true
		}
	}
	require.NoError(t, rows.Err())
	var out []string
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// TestPostgresHotPathOnDayPartitions: on a runs table partitioned by day on
// PostgreSQL, the statements that claim, hand off, accept and end runs
// read only the partition of the runs' day (the store adds their fire
// times, as on MariaDB), new runs keep their ids going up from the
// identity's, and a run whose fire time this store does not know is found
// all the same.
func TestPostgresHotPathOnDayPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := dbtest.Postgres(t)
	s, err := OpenPostgres(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	_, err = s.Migrate(ctx)
	require.NoError(t, err)
	g, err := s.GroupCreate(ctx, GroupCreateParams{AppName: "g", Members: []string{"noop://x"}, NowMs: 1})
	require.NoError(t, err)
	j, err := s.JobCreate(ctx, JobCreateParams{JobFields: JobFields{GroupID: g.ID, Name: "j", ScheduleType: "none", TimeZone: "UTC",
		MisfirePolicy: kind.MisfireDoNothing, ShardCount: 1}, NowMs: 1})
	require.NoError(t, err)
	const today = int64(1_800_000_000_000) - 1_800_000_000_000%dayMs
	mk := func(at int64) int64 {
		r, _, err := s.RunCreate(ctx, RunCreateParams{JobID: j.ID, GroupID: g.ID, ScheduledMs: at, ShardTotal: 1, TriggerType: kind.TriggerManual,
			Owner: "n1", CreatedMs: at})
		require.NoError(t, err)
		return r.ID
	}
	var unknown []int64
	for d := int64(10); d >= 1; d-- {
		unknown = append(unknown, mk(today-d*dayMs+3_600_000))
	}
	require.NoError(t, s.RunLogAppend(ctx, unknown[0], "before\n"))
	_, err = s.RunPartitionsEnsure(ctx, RunPartitionsEnsureParams{NowMs: today + 3_600_000, AheadDays: 3})
	require.NoError(t, err)
	parts, partitioned, err := s.RunPartitions(ctx)
	require.NoError(t, err)
	require.True(t, partitioned)
	require.Len(t, parts, 15, "10 past days, today, 3 ahead, pmax")
	require.Equal(t, "pmax", parts[len(parts)-1].Name)
	todays := partitionName(today)
	log, err := s.RunLogRead(ctx, unknown[0], 1)
	require.NoError(t, err)
	require.Equal(t, "before\n", log.Content, "logs are copied into the partitioned run_logs")

	var fresh []int64
	for i := int64(0); i < 5; i++ {
		fresh = append(fresh, mk(today+3_600_000+i*1000))
	}
	require.Greater(t, fresh[0], unknown[len(unknown)-1], "ids go on from the identity's")
	rec := newRecordingConn(s.db)
	s.db = rec

	claimed, err := s.RunClaimBatch(ctx, RunClaimParams{IDs: fresh, Owner: "n1", NowMs: today + 3_700_000, Token: 7})
	require.NoError(t, err)
	require.ElementsMatch(t, fresh, claimed)
	handed, err := s.RunHandOff(ctx, RunHandOffParams{Owner: "n1", IDs: fresh, NowMs: today + 3_700_001})
	require.NoError(t, err)
	require.ElementsMatch(t, fresh, handed)
	acc := make([]RunAccept, len(fresh))
	for i, id := range fresh {
		acc[i] = RunAccept{ID: id, Target: "noop://x"}
	}
	require.NoError(t, s.RunAcceptBatch(ctx, acc))
	outs := make([]RunResult, len(fresh))
	for i, id := range fresh {
		outs[i] = RunResult{ID: id, State: kind.RunSucceeded, Code: 200, FinishedMs: today + 3_700_100}
	}
	applied, err := s.RunRecordOutcomes(ctx, outs)
	require.NoError(t, err)
	require.Equal(t, []bool{true, true, true, true, true}, applied)

	checked := 0
	for _, st := range rec.recorded() {
		if !strings.HasPrefix(st.q, "UPDATE runs") && !strings.HasPrefix(st.q, "SELECT id FROM runs WHERE id IN") {
			continue
		}
		checked++
		require.Equal(t, []string{todays}, pgRunsPartitionsRead(t, s.pool, st), "statement reads only today's partition: %s", st.q)
	}
	require.GreaterOrEqual(t, checked, 4, "claim, read-back, hand-off, accept, outcome")

	// Runs whose fire time is not known here: found through every partition.
	rec.reset()
	claimed, err = s.RunClaimBatch(ctx, RunClaimParams{IDs: unknown[8:], Owner: "n1", NowMs: today + 3_700_000, Token: 8})
	require.NoError(t, err)
	require.ElementsMatch(t, unknown[8:], claimed)
	require.Len(t, pgRunsPartitionsRead(t, s.pool, rec.recorded()[0]), len(parts), "no hint: every partition")
}
