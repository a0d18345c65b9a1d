package store_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/store"
)

// TestRunningByTargetUsesIndex: the busy/idle count of the executors page
// reads the unfinished runs of each replica from runs_owner_live on
// MySQL/MariaDB, not every run.
func TestRunningByTargetUsesIndex(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, "mysql")
	ctx := context.Background()
	j := mkJob(t, st, "busy", 0)
	require.NoError(t, st.NodeHeartbeat(ctx, store.NodeHeartbeatParams{ID: "n1", Host: "h", NowMs: t0}))
	var rows []string
	var args []any
	for i := 0; i < 5000; i++ {
		state, target := "succeeded", "http://10.0.0.1:9999/"
		if i%500 == 0 {
			state = "running"
		}
		if i%1000 == 0 {
			target = "http://10.0.0.2:9999"
		}
		rows = append(rows, "(?, ?, ?, 'manual', ?, 'n1', ?, '', ?, '')")
		args = append(args, j.ID, j.GroupID, t0+int64(i), state, target, t0)
	}
	_, err := st.DB().ExecContext(ctx, "INSERT INTO runs (job_id, group_id, scheduled_ms, trigger_type, state, owner, target, params, created_ms, message) VALUES "+
		strings.Join(rows, ", "), args...)
	require.NoError(t, err)
	_, err = st.DB().ExecContext(ctx, "ANALYZE TABLE runs")
	require.NoError(t, err)

	got, err := st.RunningByTarget(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"http://10.0.0.1:9999": 5, "http://10.0.0.2:9999": 5}, got)
	got, err = st.RunningByTarget(ctx, []int64{j.GroupID + 1})
	require.NoError(t, err)
	require.Empty(t, got, "only the groups the caller may see")

	// The store's query names live = 1 (migration 0101): the 4,990 finished
	// runs are not read.
	plan := explainMySQL(t, st, "SELECT target, COUNT(*) FROM runs WHERE live = 1 AND kill_requested IN (0, 1) AND owner IN ('n1') AND state = 'running' GROUP BY target")
	require.Equal(t, "runs_owner_live", plan["key"], "plan: %v", plan)
	n, err := strconv.Atoi(plan["rows"])
	require.NoError(t, err, "plan: %v", plan)
	require.Less(t, n, 100, "rows read: the unfinished runs, not all of n1's; plan: %v", plan)
}
