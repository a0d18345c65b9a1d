package store_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/store"
)

// A replica's sweeps see exactly its unfinished runs in the states each
// asks for, and a run drops out of them once it is final. On MySQL/MariaDB
// they find the runs through runs_owner_live (migration 0101), whose live
// column the database derives from the state: these are the queries that
// would go wrong if it disagreed with kind.RunState.Final.
func TestUnfinishedRunQueriesFollowTheState(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		j := mkJob(t, st, "sweeps", 0)
		require.NoError(t, st.NodeRejoin(ctx, store.NodeHeartbeatParams{ID: "n1", Host: "h", NowMs: t0}))
		byState := map[kind.RunState]int64{}
		for i, state := range kind.RunStates {
			handed := int64(0)
			if state == kind.RunDispatching {
				handed = t0 + 1
			}
			_, err := st.DB().ExecContext(ctx, "INSERT INTO runs (job_id, group_id, scheduled_ms, sched_fire, trigger_type, state, owner, params, message, created_ms, dispatched_ms, handed_ms, kill_requested) VALUES (?, ?, ?, 1, 'schedule', ?, 'n1', '', '', ?, ?, ?, 1)",
				j.ID, j.GroupID, t0+int64(i), state, t0, t0, handed)
			require.NoError(t, err)
			var id int64
			require.NoError(t, st.DB().QueryRowContext(ctx, "SELECT id FROM runs WHERE job_id = ? AND scheduled_ms = ?", j.ID, t0+int64(i)).Scan(&id))
			byState[state] = id
		}
		ids := func(runs []store.Run) []int64 {
			var out []int64
			for _, r := range runs {
				out = append(out, r.ID)
			}
			sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
			return out
		}
		of := func(states ...kind.RunState) []int64 {
			var out []int64
			for _, s := range states {
				out = append(out, byState[s])
			}
			sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
			return out
		}
		check := func(t *testing.T, live bool) {
			t.Helper()
			want := func(states ...kind.RunState) []int64 {
				if !live {
					return nil
				}
				return of(states...)
			}
			kills, err := st.RunListKillRequested(ctx, "n1")
			require.NoError(t, err)
			require.Equal(t, want(kind.RunDispatching, kind.RunRunning), ids(kills), "kill poll")
			running, err := st.RunListRunningSince(ctx, t0+1, 100)
			require.NoError(t, err)
			require.Equal(t, want(kind.RunRunning), ids(running), "lost-run check")
			handed, err := st.RunListHanded(ctx, "n1", 0, 100)
			require.NoError(t, err)
			require.Equal(t, want(kind.RunDispatching), ids(handed), "handed runs")
			n, err := st.RunCountHanded(ctx, "n1")
			require.NoError(t, err)
			require.Equal(t, len(want(kind.RunDispatching)), n, "handed runs counted")
			inflight, err := st.RunListInFlightMany(ctx, []int64{j.ID}, t0+100)
			require.NoError(t, err)
			require.Equal(t, want(kind.RunDispatching, kind.RunRunning), ids(inflight[j.ID]), "in flight")
			inflight, err = st.RunListInFlightMany(ctx, []int64{j.ID}, t0+1)
			require.NoError(t, err)
			require.Equal(t, want(kind.RunDispatching), ids(inflight[j.ID]), "in flight, fire time by t0+1")
			overdue, err := st.RunTakeOver(ctx, store.RunTakeOverParams{From: "n1", To: "n1", DueBeforeMs: t0 + 1000, Limit: 100})
			require.NoError(t, err)
			require.Equal(t, want(kind.RunScheduled), ids(overdue), "overdue sweep")
		}
		t.Run("unfinished", func(t *testing.T) { check(t, true) })
		if st.Kind() == "mysql" {
			rows, err := st.DB().QueryContext(ctx, "SELECT state, live FROM runs WHERE job_id = ?", j.ID)
			require.NoError(t, err)
			n := 0
			for rows.Next() {
				var state kind.RunState
				var live int
				require.NoError(t, rows.Scan(&state, &live))
				require.Equal(t, !state.Final(), live == 1, "live of a %s run", state)
				n++
			}
			require.NoError(t, rows.Err())
			require.Equal(t, len(kind.RunStates), n)
		}
		_, err := st.DB().ExecContext(ctx, fmt.Sprintf("UPDATE runs SET state = 'succeeded' WHERE job_id = ? AND state IN ('%s')",
			strings.Join([]string{string(kind.RunScheduled), string(kind.RunDispatching), string(kind.RunRunning)}, "', '")), j.ID)
		require.NoError(t, err)
		t.Run("final", func(t *testing.T) { check(t, false) })
	})
}
