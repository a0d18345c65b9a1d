package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/store"
)

// Batched appends land in order, after what a run's log already holds,
// with the right line numbers, also while single appends race them.
func TestRunLogAppendMany(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		j := mkJob(t, st, "j", t0)
		var ids []int64
		for i := range 3 {
			r, _, err := st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: t0 + int64(i)*1000, TriggerType: kind.TriggerManual, Owner: "n", CreatedMs: t0})
			require.NoError(t, err)
			ids = append(ids, r.ID)
		}
		require.NoError(t, st.RunLogAppend(ctx, ids[0], "before\n"))
		require.NoError(t, st.RunLogAppendMany(ctx, []store.RunLogEntry{
			{RunID: ids[0], Text: "a1\na2"},
			{RunID: ids[1], Text: "b1\n"},
			{RunID: ids[0], Text: ""}, // nothing
			{RunID: ids[0], Text: "a3\n"},
		}))
		c, err := st.RunLogRead(ctx, ids[0], 1)
		require.NoError(t, err)
		require.Equal(t, "before\na1\na2\na3\n", c.Content)
		require.Equal(t, 4, c.ToLine)
		c, err = st.RunLogRead(ctx, ids[0], 3)
		require.NoError(t, err)
		require.Equal(t, "a2\na3\n", c.Content)
		c, err = st.RunLogRead(ctx, ids[1], 1)
		require.NoError(t, err)
		require.Equal(t, "b1\n", c.Content)
		c, err = st.RunLogRead(ctx, ids[2], 1)
		require.NoError(t, err)
		require.Equal(t, "", c.Content)

		// Races with single appends to the same run: every line is kept once.
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		for i := range 20 {
			wg.Add(2)
			go func() { defer wg.Done(); errs <- st.RunLogAppend(ctx, ids[2], fmt.Sprintf("single %d", i)) }()
			go func() {
				defer wg.Done()
				errs <- st.RunLogAppendMany(ctx, []store.RunLogEntry{{RunID: ids[2], Text: fmt.Sprintf("many %d", i)}, {RunID: ids[1], Text: fmt.Sprintf("other %d", i)}})
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		c, err = st.RunLogRead(ctx, ids[2], 1)
		require.NoError(t, err)
		require.Equal(t, 40, c.ToLine)
		c, err = st.RunLogRead(ctx, ids[1], 1)
		require.NoError(t, err)
		require.Equal(t, 21, c.ToLine)
	})
}
