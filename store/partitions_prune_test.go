package store

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/kind"
)

// recordingConn records the statements a Store sends, also in its
// transactions.
type recordingConn struct {
	conn
	mu    *sync.Mutex
	stmts *[]recorded
}

func newRecordingConn(c conn) *recordingConn {
	return &recordingConn{conn: c, mu: &sync.Mutex{}, stmts: &[]recorded{}}
}

func (r *recordingConn) wrapTx(c conn) conn { return &recordingConn{conn: c, mu: r.mu, stmts: r.stmts} }

func (r *recordingConn) recorded() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), *r.stmts...)
}

func (r *recordingConn) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.stmts = nil
}

type recorded struct {
	q    string
	args []any
}

func (r *recordingConn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	r.mu.Lock()
	*r.stmts = append(*r.stmts, recorded{q, args})
	r.mu.Unlock()
	return r.conn.ExecContext(ctx, q, args...)
}

func (r *recordingConn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	r.mu.Lock()
	*r.stmts = append(*r.stmts, recorded{q, args})
	r.mu.Unlock()
	return r.conn.QueryContext(ctx, q, args...)
}

func (r *recordingConn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	r.mu.Lock()
	*r.stmts = append(*r.stmts, recorded{q, args})
	r.mu.Unlock()
	return r.conn.QueryRowContext(ctx, q, args...)
}

// explainRunsPartitions is the partitions column of each row of EXPLAIN
// PARTITIONS stmt that reads table runs (under any alias).
func explainRunsPartitions(t *testing.T, db *sql.DB, st recorded) []string {
	t.Helper()
	rows, err := db.Query("EXPLAIN PARTITIONS "+st.q, st.args...)
	require.NoError(t, err, "explain %s", st.q)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		row := map[string]string{}
		for i, c := range cols {
			row[c] = vals[i].String
		}
		if row["table"] == "runs" || row["table"] == "r" {
			out = append(out, row["partitions"])
		}
	}
	require.NoError(t, rows.Err())
	require.Len(t, out, 2, "the newest runs and their outcomes: %s", st.q)
	return out
}

// explainPartitions is the partitions column of EXPLAIN PARTITIONS stmt.
func explainPartitions(t *testing.T, db *sql.DB, st recorded) string {
	t.Helper()
	rows, err := db.Query("EXPLAIN PARTITIONS "+st.q, st.args...)
	require.NoError(t, err, "explain %s", st.q)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	require.True(t, rows.Next())
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	require.NoError(t, rows.Scan(ptrs...))
	for i, c := range cols {
		if c == "partitions" {
			return vals[i].String
		}
	}
	t.Fatalf("no partitions column in EXPLAIN PARTITIONS: %v", cols)
	return ""
}

// TestHotPathPrunesPartitions: on a runs table partitioned by day, the
// statements that claim, hand off, accept and end runs, and record their
// attempts, read only the partition of the runs' day (EXPLAIN PARTITIONS of
// the very statements sent), and still do their work. A run whose fire time
// this store does not know is found all the same, through every partition.
func TestHotPathPrunesPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := dbtest.MySQL(t)
	s, err := OpenMySQL(ctx, dsn)
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
	// History over ten days, then partitioned: these fire times are not
	// remembered (the table was not partitioned when they were created).
	var unknown []int64
	for d := int64(10); d >= 1; d-- {
		unknown = append(unknown, mk(today-d*dayMs+3_600_000))
	}
	_, err = s.RunPartitionsEnsure(ctx, RunPartitionsEnsureParams{NowMs: today + 3_600_000, AheadDays: 3})
	require.NoError(t, err)
	parts, _, err := s.RunPartitions(ctx)
	require.NoError(t, err)
	require.Len(t, parts, 15, "10 past days, today, 3 ahead, pmax")
	todays := partitionName(today)

	var fresh []int64
	for i := int64(0); i < 5; i++ {
		fresh = append(fresh, mk(today+3_600_000+i*1000))
	}
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
	require.NoError(t, s.RunSetAttempts(ctx, fresh[0], `[{"target":"noop://x"}]`))
	outs := make([]RunResult, len(fresh))
	for i, id := range fresh {
		outs[i] = RunResult{ID: id, State: kind.RunSucceeded, Code: 200, FinishedMs: today + 3_700_100}
	}
	applied, err := s.RunRecordOutcomes(ctx, outs)
	require.NoError(t, err)
	require.Equal(t, []bool{true, true, true, true, true}, applied)
	for _, id := range fresh {
		r, err := s.RunGet(ctx, id)
		require.NoError(t, err)
		require.Equal(t, kind.RunSucceeded, r.State)
	}

	var checked, jobs int
	for _, st := range rec.recorded() {
		if strings.HasPrefix(st.q, "UPDATE jobs") {
			// The job's last outcome: every read of runs in today's partition.
			jobs++
			for _, p := range explainRunsPartitions(t, s.pool, st) {
				require.Equal(t, todays, p, "statement reads only today's partition: %s", st.q)
			}
			continue
		}
		if !strings.HasPrefix(st.q, "UPDATE runs") && !strings.HasPrefix(st.q, "SELECT id FROM runs WHERE id IN") {
			continue
		}
		checked++
		require.Equal(t, todays, explainPartitions(t, s.pool, st), "statement reads only today's partition: %s", st.q)
	}
	require.GreaterOrEqual(t, checked, 5, "claim, read-back, hand-off, accept, attempts, outcome")
	require.Equal(t, 1, jobs, "the jobs' last outcome, with the outcome")

	// Runs whose fire time is not known here: found through every partition.
	rec.reset()
	claimed, err = s.RunClaimBatch(ctx, RunClaimParams{IDs: unknown[8:], Owner: "n1", NowMs: today + 3_700_000, Token: 8})
	require.NoError(t, err)
	require.ElementsMatch(t, unknown[8:], claimed)
	require.Len(t, strings.Split(explainPartitions(t, s.pool, rec.recorded()[0]), ","), len(parts), "no hint: every partition")

	// A callback reaching a replica that did not create the runs: its read
	// of them goes through every partition and remembers their fire times,
	// so the outcome it then records reads only their days' partitions, and
	// so does a later read of one of them.
	s2, err := OpenMySQL(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { s2.Close() })
	rec2 := newRecordingConn(s2.db)
	s2.db = rec2
	got, err := s2.RunGetMany(ctx, unknown[8:])
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Len(t, strings.Split(explainPartitions(t, s.pool, rec2.recorded()[0]), ","), len(parts), "the first read: every partition")
	rec2.reset()
	applied, err = s2.RunRecordOutcomes(ctx, []RunResult{{ID: unknown[8], State: kind.RunFailed, Code: 500, FinishedMs: today + 3_800_000},
		{ID: unknown[9], State: kind.RunSucceeded, Code: 200, FinishedMs: today + 3_800_000}})
	require.NoError(t, err)
	require.Equal(t, []bool{true, true}, applied)
	r, err := s2.RunGet(ctx, unknown[9])
	require.NoError(t, err)
	require.Equal(t, kind.RunSucceeded, r.State)
	twoDays := partitionName(today-2*dayMs) + "," + partitionName(today-dayMs)
	var updates, reads int
	for _, st := range rec2.recorded() {
		switch {
		case strings.HasPrefix(st.q, "UPDATE runs"):
			updates++
			require.Equal(t, twoDays, explainPartitions(t, s.pool, st), "outcome: %s", st.q)
		case strings.HasPrefix(st.q, "SELECT "+runCols+" FROM runs WHERE id = ?"):
			reads++
			require.Equal(t, partitionName(today-dayMs), explainPartitions(t, s.pool, st), "read: %s", st.q)
		}
	}
	require.Equal(t, 1, updates, "the outcome")
	require.Equal(t, 1, reads, "the read by id")
}
