package xxlapi_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
)

// A fast executor calls back before the server has recorded where the run
// went. When this replica sent the run (SentTarget knows it), the callback
// is accepted at once and the outcome records the target; a run nobody
// here sent is still refused once the wait for its record runs out.
func TestCallbackBeforeTargetRecorded(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	sent := map[int64]string{}
	b := setupWith(t, "sqlite", func(o *service.ExecutorsOptions) {
		o.SentTarget = func(id int64) string {
			mu.Lock()
			defer mu.Unlock()
			return sent[id]
		}
	})
	ctx := context.Background()
	dispatching := func(at int64) store.Run {
		r, _, err := b.st.RunCreate(ctx, store.RunCreateParams{JobID: b.job.ID, GroupID: b.job.GroupID, ScheduledMs: at, TriggerType: kind.TriggerManual, Owner: "n", CreatedMs: 1})
		require.NoError(t, err)
		claimed, err := b.st.RunClaimBatch(ctx, store.RunClaimParams{IDs: []int64{r.ID}, Owner: "n", NowMs: at})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		return r
	}
	mine, unknown := dispatching(1000), dispatching(2000)
	mu.Lock()
	sent[mine.ID] = "http://10.0.0.5:9999"
	mu.Unlock()

	env := b.post(t, "/api/callback", fmt.Sprintf(`[{"logId":%d,"logDateTim":1,"handleCode":200,"handleMsg":"fast"}]`, mine.ID), token)
	require.EqualValues(t, 200, env["code"], "%v", env)
	got, err := b.st.RunGet(ctx, mine.ID)
	require.NoError(t, err)
	require.Equal(t, kind.RunSucceeded, got.State)
	require.Equal(t, "http://10.0.0.5:9999", got.Target, "the outcome records where the run went")

	env = b.post(t, "/api/callback", fmt.Sprintf(`[{"logId":%d,"logDateTim":1,"handleCode":200}]`, unknown.ID), token)
	require.EqualValues(t, 500, env["code"], "%v", env)
	require.Contains(t, env["msg"], service.RefusedNotRecorded)
	got, err = b.st.RunGet(ctx, unknown.ID)
	require.NoError(t, err)
	require.Equal(t, kind.RunDispatching, got.State)
}
