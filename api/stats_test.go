package api_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/maintenance/reports"
	"github.com/ringjob/ringjob/store"
)

func TestStats(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			now := time.Date(2026, 5, 4, 10, 30, 20, 0, time.UTC)
			clock := clockwork.NewFakeClockAt(now)
			b := setup(t, dialect, setupOpts{clock: clock, noSched: true})
			ga := b.group("stats-a", "local://echo")
			gb := b.group("stats-b", "local://echo")
			ja := id(b.job(map[string]any{"group_id": ga, "name": "a"}))
			jb := id(b.job(map[string]any{"group_id": gb, "name": "b"}))

			// Runs straight into the ledger at known times and outcomes.
			mk := func(job, group int64, at time.Time, state kind.RunState, took time.Duration) {
				r, _, err := b.st.RunCreate(ctx, store.RunCreateParams{JobID: job, GroupID: group, ScheduledMs: at.UnixMilli(), ShardTotal: 1,
					TriggerType: kind.TriggerManual, Owner: "n1", CreatedMs: at.UnixMilli()})
				require.NoError(t, err)
				_, err = b.st.RunClaimBatch(ctx, store.RunClaimParams{IDs: []int64{r.ID}, Owner: "n1", NowMs: at.UnixMilli(), LateAfterMs: 1000})
				require.NoError(t, err)
				ok, err := b.st.RunRecordOutcomes(ctx, []store.RunResult{{ID: r.ID, State: state, FinishedMs: at.Add(took).UnixMilli(), Source: store.SourceCallback}})
				require.NoError(t, err)
				require.Equal(t, []bool{true}, ok)
			}
			min10 := now.Truncate(time.Minute).Add(-10 * time.Minute)
			mk(ja, ga, min10.Add(5*time.Second), kind.RunSucceeded, 2*time.Second)
			mk(ja, ga, min10.Add(6*time.Second), kind.RunFailed, 4*time.Second)
			mk(jb, gb, min10.Add(7*time.Second), kind.RunTimedOut, 9*time.Second)
			mk(jb, gb, now.Add(-5*time.Hour), kind.RunLost, 0)

			// Before any roll-up: empty buckets, no counted_at.
			empty := b.must(200, "GET", "/api/v1/stats", nil)
			require.Equal(t, "", empty["counted_at"])
			require.Len(t, empty["buckets"], 60)

			r, err := reports.New(reports.Options{Store: b.st, Node: "n1", Clock: clock})
			require.NoError(t, err)
			_, err = r.Tick(ctx)
			require.NoError(t, err)

			hour := b.must(200, "GET", "/api/v1/stats?period=hour", nil)
			require.Equal(t, "minute", hour["resolution"])
			buckets := hour["buckets"].([]any)
			require.Len(t, buckets, 60)
			require.Equal(t, now.Truncate(time.Minute).Add(time.Minute).Add(-time.Hour).Format(time.RFC3339), hour["from"])
			last := buckets[59].(map[string]any)
			require.Equal(t, now.Truncate(time.Minute).Format(time.RFC3339), last["start"], "the current minute is the last bucket")
			b10 := buckets[49].(map[string]any)
			require.Equal(t, min10.Format(time.RFC3339), b10["start"])
			require.Equal(t, map[string]any{"start": min10.Format(time.RFC3339), "runs": 3.0, "succeeded": 1.0, "failed": 1.0, "timed_out": 1.0,
				"killed": 0.0, "lost": 0.0, "misfired": 0.0, "duration_sum_ms": 15000.0, "duration_max_ms": 9000.0}, b10)
			require.Equal(t, 3.0, hour["totals"].(map[string]any)["runs"], "the lost run 5h ago is outside the hour")
			require.NotEmpty(t, hour["counted_at"])

			day := b.must(200, "GET", "/api/v1/stats?period=day", nil)
			require.Equal(t, "hour", day["resolution"])
			require.Len(t, day["buckets"], 24)
			require.Equal(t, 4.0, day["totals"].(map[string]any)["runs"])
			require.Equal(t, 1.0, day["totals"].(map[string]any)["lost"])
			require.Len(t, b.must(200, "GET", "/api/v1/stats?period=day&resolution=minute", nil)["buckets"], 1440)
			require.Len(t, b.must(200, "GET", "/api/v1/stats?period=week", nil)["buckets"], 168)

			byGroup := b.must(200, "GET", fmt.Sprintf("/api/v1/stats?period=day&group_id=%d", gb), nil)
			require.Equal(t, 2.0, byGroup["totals"].(map[string]any)["runs"])
			byJob := b.must(200, "GET", fmt.Sprintf("/api/v1/stats?period=hour&job_id=%d", ja), nil)
			require.Equal(t, 2.0, byJob["totals"].(map[string]any)["runs"])
			require.Equal(t, float64(ga), byJob["group_id"], "a job's stats name its group")

			for _, tc := range []struct{ query, field string }{
				{"period=month", "period"},
				{"resolution=second", "resolution"},
				{"period=week&resolution=minute", "resolution"},
				{"group_id=abc", "group_id"},
				{fmt.Sprintf("job_id=%d&group_id=%d", ja, gb), "group_id"},
			} {
				res := b.call("GET", "/api/v1/stats?"+tc.query, nil)
				require.Equal(t, 400, res.Status, "%s: %s", tc.query, res.Body)
				code, field, _ := res.errCode(t)
				require.Equal(t, "invalid_argument", code)
				require.Equal(t, tc.field, field, tc.query)
			}
			require.Equal(t, 404, b.call("GET", "/api/v1/stats?job_id=999999", nil).Status)
			require.Equal(t, 401, b.call("GET", "/api/v1/stats", nil, "Authorization", "Bearer nope").Status)
		})
	}
}
