package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/store"
)

// TestExecutorsBusy: the executors listing counts the runs running on each
// registered address (busy) and shows the others idle.
func TestExecutorsBusy(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := setup(t, dialect, setupOpts{noSched: true})
			g := b.group("busy", "local://echo")
			j := b.job(map[string]any{"group_id": g, "name": "j"})
			now := time.Now().UnixMilli()
			for _, addr := range []string{"http://10.0.0.1:9999/", "http://10.0.0.2:9999/"} {
				require.NoError(t, b.st.RegistryUpsert(ctx, store.RegistryUpsertParams{AppName: "busy", Address: addr, NowMs: now}))
			}
			require.NoError(t, b.st.NodeHeartbeat(ctx, store.NodeHeartbeatParams{ID: "replica-1", Host: "h", NowMs: now}))
			// Runs as a replica records them: claimed, accepted by a target.
			running := func(target string) int64 {
				r, _, err := b.st.RunCreate(ctx, store.RunCreateParams{JobID: id(j), GroupID: g, ScheduledMs: now, TriggerType: kind.TriggerManual,
					Owner: "replica-1", CreatedMs: now})
				require.NoError(t, err)
				_, err = b.st.RunClaimBatch(ctx, store.RunClaimParams{IDs: []int64{r.ID}, Owner: "replica-1", NowMs: now})
				require.NoError(t, err)
				require.NoError(t, b.st.RunAcceptBatch(ctx, []store.RunAccept{{ID: r.ID, Target: target}}))
				return r.ID
			}
			running("http://10.0.0.1:9999/")
			running("http://10.0.0.1:9999") // the same executor without the slash
			done := running("http://10.0.0.1:9999/")
			_, err := b.st.RunRecordOutcomes(ctx, []store.RunResult{{ID: done, State: kind.RunSucceeded, Code: 200, FinishedMs: now}})
			require.NoError(t, err)

			load := map[string][2]any{}
			for _, it := range b.must(200, "GET", "/api/v1/executors", nil)["items"].([]any) {
				e := it.(map[string]any)
				load[e["address"].(string)] = [2]any{e["running"], e["busy"]}
			}
			require.Equal(t, map[string][2]any{
				"http://10.0.0.1:9999/": {2.0, true},
				"http://10.0.0.2:9999/": {0.0, false},
			}, load, "finished runs do not count")
		})
	}
}
