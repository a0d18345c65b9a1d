package api_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTriggerShardOptions triggers all shards of a chosen count, or one
// shard only; bad shard options are field errors that create nothing.
func TestTriggerShardOptions(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{})
			g := b.group("shards", "local://echo")
			j := b.job(map[string]any{"group_id": g, "name": "sharded"})
			path := fmt.Sprintf("/api/v1/jobs/%d/trigger", id(j))
			shards := func() [][2]float64 {
				var out [][2]float64
				for _, it := range b.must(200, "GET", fmt.Sprintf("/api/v1/runs?job_id=%d&limit=100", id(j)), nil)["items"].([]any) {
					r := it.(map[string]any)
					out = append(out, [2]float64{r["shard_index"].(float64), r["shard_total"].(float64)})
				}
				return out
			}

			first := b.must(201, "POST", path, map[string]any{"shard_total": 3, "params": "all"})
			require.Equal(t, 0.0, first["shard_index"])
			require.Equal(t, 3.0, first["shard_total"])
			require.ElementsMatch(t, [][2]float64{{0, 3}, {1, 3}, {2, 3}}, shards(), "all three shards")

			one := b.must(201, "POST", path, map[string]any{"shard_total": 4, "shard_index": 2})
			require.Equal(t, 2.0, one["shard_index"])
			require.Equal(t, 4.0, one["shard_total"])
			require.Len(t, shards(), 4, "one more run: shard 2 of 4 only")
			b.waitRun(id(one), "success", func(r map[string]any) bool { return r["state"] == "succeeded" })

			// The job's own count (not sharding: 1) when shard_total is left out.
			own := b.must(201, "POST", path, map[string]any{"shard_index": 0})
			require.Equal(t, 1.0, own["shard_total"])

			// A repeated key with the same options is the same run; with
			// other options it is refused.
			again := b.must(201, "POST", path, map[string]any{"shard_total": 2, "shard_index": 1}, "Idempotency-Key", "shard-key")
			require.Equal(t, id(again), id(b.must(200, "POST", path, map[string]any{"shard_total": 2, "shard_index": 1}, "Idempotency-Key", "shard-key")))
			require.GreaterOrEqual(t, b.call("POST", path, map[string]any{"shard_total": 2, "shard_index": 0}, "Idempotency-Key", "shard-key").Status, 400)

			before := len(shards())
			for _, c := range []struct {
				body  map[string]any
				field string
			}{
				{map[string]any{"shard_total": 0}, "shard_total"},
				{map[string]any{"shard_total": 1001}, "shard_total"},
				{map[string]any{"shard_index": -1}, "shard_index"},
				{map[string]any{"shard_total": 3, "shard_index": 3}, "shard_index"},
				{map[string]any{"shard_index": 1}, "shard_index"}, // the job fans out to 1 shard
				{map[string]any{"shard_index": "one"}, "shard_index"},
			} {
				r := b.call("POST", path, c.body)
				require.Equal(t, 400, r.Status, "%v: %s", c.body, r.Body)
				_, field, _ := r.errCode(t)
				require.Equal(t, c.field, field, "%v", c.body)
			}
			require.Len(t, shards(), before, "refused triggers create nothing")
		})
	}
}
