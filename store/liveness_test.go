package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/store"
)

// Two claims of the same runs by the same node in the same millisecond (a
// run offered twice) each get back exactly the rows they changed: every run
// once, none twice.
func TestClaimReadsBackExactlyByToken(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		j := mkJob(t, st, "j", t0)
		var ids []int64
		for i := 0; i < 200; i++ {
			r, _, err := st.RunCreate(ctx, store.RunCreateParams{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: t0 + int64(i), SchedFire: true,
				TriggerType: kind.TriggerSchedule, Owner: "n", CreatedMs: t0})
			require.NoError(t, err)
			ids = append(ids, r.ID)
		}
		for round := 0; round < 5; round++ {
			var wg sync.WaitGroup
			var mu sync.Mutex
			got := map[int64]int{}
			for c := 0; c < 3; c++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					claimed, err := st.RunClaimBatch(ctx, store.RunClaimParams{IDs: ids, Owner: "n", NowMs: t0 + 5000})
					require.NoError(t, err)
					mu.Lock()
					defer mu.Unlock()
					for _, id := range claimed {
						got[id]++
					}
				}()
			}
			wg.Wait()
			require.Len(t, got, len(ids))
			for id, n := range got {
				require.Equal(t, 1, n, "run %d claimed by %d claimers", id, n)
			}
			// Back to scheduled for the next round.
			for _, id := range ids {
				ok, err := st.RunRequeue(ctx, id, "n")
				require.NoError(t, err)
				require.True(t, ok)
			}
		}
		// A claim tried again with the token of an attempt whose answer was
		// lost gets the runs that attempt claimed.
		token := store.NewClaimToken()
		first, err := st.RunClaimBatch(ctx, store.RunClaimParams{IDs: ids[:10], Owner: "n", NowMs: t0 + 6000, Token: token})
		require.NoError(t, err)
		require.Len(t, first, 10)
		again, err := st.RunClaimBatch(ctx, store.RunClaimParams{IDs: ids[:20], Owner: "n", NowMs: t0 + 6001, Token: token})
		require.NoError(t, err)
		require.ElementsMatch(t, ids[:20], again)
		other, err := st.RunClaimBatch(ctx, store.RunClaimParams{IDs: ids[:20], Owner: "n", NowMs: t0 + 6001})
		require.NoError(t, err)
		require.Empty(t, other)
	})
}

// Declaring a node dead and the node's heartbeat are a compare-and-set
// against each other: the node learns it was declared dead, and a
// declaration based on a heartbeat it has since renewed fails.
func TestDeclareDeadAgainstHeartbeat(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		hb := func(ms int64) error {
			return st.NodeHeartbeat(ctx, store.NodeHeartbeatParams{ID: "a", Host: "h", NowMs: ms})
		}
		require.NoError(t, hb(t0))
		require.NoError(t, hb(t0+1000))
		ok, err := st.NodeDeclareDead(ctx, "a", t0)
		require.NoError(t, err)
		require.False(t, ok, "a heartbeat renewed since: not dead")
		ok, err = st.NodeDeclareDead(ctx, "a", t0+1000)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = st.NodeDeclareDead(ctx, "a", t0+1000)
		require.NoError(t, err)
		require.False(t, ok, "declared once")
		nodes, err := st.NodeList(ctx)
		require.NoError(t, err)
		require.True(t, nodes[0].Declared())

		require.ErrorIs(t, hb(t0+2000), store.ErrDeclaredDead)
		require.ErrorIs(t, hb(t0+2000), store.ErrDeclaredDead, "still dead until it rejoins")
		// Rejoining at the very heartbeat it was declared dead at still
		// makes it alive.
		require.NoError(t, st.NodeRejoin(ctx, store.NodeHeartbeatParams{ID: "a", Host: "h", NowMs: t0 + 1000}))
		nodes, err = st.NodeList(ctx)
		require.NoError(t, err)
		require.False(t, nodes[0].Declared())
		require.NoError(t, hb(t0+3000))
	})
}

// A pre-read transaction whose process froze (idle in the transaction) is
// ended by the database after its idle timeout, so its partitions are free
// for the other replicas before the frozen process wakes up.
func TestFrozenPreReadFreesItsPartitions(t *testing.T) {
	t.Parallel()
	storetest.EachServer(t, testFrozenPreReadFreesItsPartitions)
}

func testFrozenPreReadFreesItsPartitions(t *testing.T, st *store.Store) {
	ctx := context.Background()
	require.NoError(t, st.LockPartitionsEnsure(ctx, 2))
	frozen, err := st.ScheduleLock(ctx, store.ScheduleLockParams{Node: "frozen", Preferred: []int{0, 1}, Max: 2, NowMs: t0, IdleTimeoutSec: 1})
	require.NoError(t, err)
	require.Equal(t, []int{0, 1}, frozen.Held())
	defer frozen.Rollback()
	other, err := st.ScheduleLock(ctx, store.ScheduleLockParams{Node: "other", Preferred: []int{0, 1}, Max: 2, NowMs: t0})
	require.NoError(t, err)
	require.Empty(t, other.Held())
	other.Rollback()
	require.Eventually(t, func() bool {
		o, err := st.ScheduleLock(ctx, store.ScheduleLockParams{Node: "other", Preferred: []int{0, 1}, Max: 2, NowMs: t0})
		if err != nil {
			return false
		}
		defer o.Rollback()
		return len(o.Held()) == 2
	}, 10*time.Second, 100*time.Millisecond)
	require.Error(t, frozen.Commit(), "the frozen transaction was ended")
}

// The idle timeout of a pre-read stays with the pre-read: the pooled
// connection it used goes back without it, so a later long transaction on
// that connection (an apply of thousands of jobs) is not ended midway.
func TestPreReadIdleTimeoutDoesNotOutliveIt(t *testing.T) {
	t.Parallel()
	storetest.EachServer(t, testPreReadIdleTimeoutDoesNotOutliveIt)
}

func testPreReadIdleTimeoutDoesNotOutliveIt(t *testing.T, st *store.Store) {
	st.DB().SetMaxOpenConns(1) // the next transaction gets the same connection
	ctx := context.Background()
	require.NoError(t, st.LockPartitionsEnsure(ctx, 1))
	pre, err := st.ScheduleLock(ctx, store.ScheduleLockParams{Node: "a", Preferred: []int{0}, Max: 1, NowMs: t0, IdleTimeoutSec: 1})
	require.NoError(t, err)
	require.NoError(t, pre.Commit())

	var idleTimeout string
	q := "SELECT @@session.idle_transaction_timeout"
	if st.Kind() == "postgres" {
		q = "SHOW idle_in_transaction_session_timeout"
	}
	require.NoError(t, st.DB().QueryRowContext(ctx, q).Scan(&idleTimeout))
	require.Equal(t, "0", idleTimeout, "the pooled connection kept the pre-read's idle timeout")
	err = st.Tx(ctx, func(tx *store.Store) error {
		if err := tx.NodeHeartbeat(ctx, store.NodeHeartbeatParams{ID: "a", Host: "h", NowMs: t0}); err != nil {
			return err
		}
		time.Sleep(2 * time.Second) // idle in the transaction, past the pre-read's limit
		return tx.NodeHeartbeat(ctx, store.NodeHeartbeatParams{ID: "a", Host: "h", NowMs: t0 + 1000})
	})
	require.NoError(t, err, "a transaction idle for 2 s after a pre-read with a 1 s idle limit")
}
