package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/store"
)

// The retention purge keeps the unfinished runs of every replica: the
// owners are listed first (on PostgreSQL one index probe each), and a
// replica left out of that list would have its running runs purged.
func TestRunsNeededKeepsTheUnfinishedRunsOfEveryOwner(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		j := mkJob(t, st, "needed-owners", 0)
		var ids []int64
		for i, owner := range []string{"node-c", "node-a", "node-b"} {
			r, _, err := st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: t0 + int64(i), TriggerType: kind.TriggerManual,
				Owner: owner, CreatedMs: t0})
			require.NoError(t, err)
			ids = append(ids, r.ID)
		}
		needed, err := st.RunsNeeded(ctx, ids[len(ids)-1])
		require.NoError(t, err)
		for _, id := range ids {
			require.True(t, needed[id], "run %d is not listed as needed", id)
		}
	})
}
