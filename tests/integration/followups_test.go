package integration_test

import (
	"context"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
)

func (s *server) job2(spec service.JobSpec) store.Job {
	j, err := s.svc.CreateJob(context.Background(), service.JobCreateParams{JobSpec: spec})
	require.NoError(s.t, err)
	return j
}

func TestChildJobCycleRejected(t *testing.T) {
	t.Parallel()
	eachServer(t, testChildJobCycleRejected)
}

func testChildJobCycleRejected(t *testing.T, dialect string) {
	s := startServer(t, dialect)
	ctx := context.Background()
	g := s.groupWith("cycles", "local://env")
	c := s.job2(service.JobSpec{GroupID: g.ID, Name: "C"})
	b := s.job2(service.JobSpec{GroupID: g.ID, Name: "B", ChildJobIDs: []int64{c.ID}})
	a := s.job2(service.JobSpec{GroupID: g.ID, Name: "A", ChildJobIDs: []int64{b.ID}})
	_, err := s.svc.UpdateJob(ctx, service.JobUpdateParams{ID: c.ID, JobSpec: service.JobSpec{GroupID: g.ID, Name: "C", ChildJobIDs: []int64{a.ID}}})
	var ve *service.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "child_job_ids", ve.Field)
	require.Contains(t, ve.Message, "cycle")
	_, err = s.svc.UpdateJob(ctx, service.JobUpdateParams{ID: a.ID, JobSpec: service.JobSpec{GroupID: g.ID, Name: "A", ChildJobIDs: []int64{a.ID}}})
	require.ErrorAs(t, err, &ve, "a job is not its own child")
	_, err = s.svc.CreateJob(ctx, service.JobCreateParams{JobSpec: service.JobSpec{GroupID: g.ID, Name: "D", ChildJobIDs: []int64{999999}}})
	require.ErrorAs(t, err, &ve, "children must exist")
	got, _ := s.svc.GetJob(ctx, c.ID)
	require.Empty(t, got.ChildJobIDs, "a refused update changes nothing")
}

func TestFailedShardIsRetriedAlone(t *testing.T) {
	t.Parallel()
	eachServer(t, testFailedShardIsRetriedAlone)
}

func testFailedShardIsRetriedAlone(t *testing.T, dialect string) {
	s := startServer(t, dialect)
	g := s.groupWith("shard-retry", "local://flaky-shard")
	j := s.job2(service.JobSpec{GroupID: g.ID, Name: "shards", RouteStrategy: "sharding", ShardCount: 3, RetryCount: 2})
	marker := filepath.Join(t.TempDir(), "shard1-failed-once")
	first := s.trigger(j, marker)
	var runs []store.Run
	require.Eventually(t, func() bool {
		runs, _ = s.st.RunList(context.Background(), store.RunListParams{JobID: first.JobID, Limit: 20})
		ok := 0
		for _, r := range runs {
			if r.State == kind.RunSucceeded {
				ok++
			}
		}
		return ok == 3
	}, 20*time.Second, 20*time.Millisecond)
	require.Len(t, runs, 4, "three shards and one retry")
	for _, r := range runs {
		if r.Attempt == 1 {
			require.Equal(t, 1, r.ShardIndex, "only the failed shard is retried")
			require.Equal(t, 3, r.ShardTotal)
			require.Equal(t, marker, r.Params, "with the same params")
			require.NotZero(t, r.RetryOf)
		}
	}
}

func TestMaxInFlightAndBlockStrategiesOnLocalTargets(t *testing.T) {
	t.Parallel()
	eachServer(t, testMaxInFlightAndBlockStrategiesOnLocalTargets)
}

func testMaxInFlightAndBlockStrategiesOnLocalTargets(t *testing.T, dialect string) {
	s := startServer(t, dialect)
	ctx := context.Background()

	t.Run("max in flight caps concurrent shards", func(t *testing.T) {
		g := s.groupWith("capped", "local://nap")
		j := s.job2(service.JobSpec{GroupID: g.ID, Name: "capped", RouteStrategy: "sharding", ShardCount: 4, MaxInFlight: 2})
		first := s.trigger(j, "")
		var runs []store.Run
		require.Eventually(t, func() bool {
			runs, _ = s.st.RunList(ctx, store.RunListParams{JobID: first.JobID, States: []kind.RunState{kind.RunSucceeded}, Limit: 10})
			return len(runs) == 4
		}, 20*time.Second, 20*time.Millisecond)
		type ev struct {
			at    int64
			delta int
		}
		var evs []ev
		for _, r := range runs {
			// From the hand-off (the send follows it) to the recorded end;
			// dispatched_ms is the claim, before the in-flight check.
			require.NotZero(t, r.HandedMs, "run %d", r.ID)
			evs = append(evs, ev{r.HandedMs, 1}, ev{r.FinishedMs, -1})
		}
		sort.Slice(evs, func(a, b int) bool {
			return evs[a].at < evs[b].at || (evs[a].at == evs[b].at && evs[a].delta < evs[b].delta)
		})
		cur, peak := 0, 0
		for _, e := range evs {
			cur += e.delta
			peak = max(peak, cur)
		}
		require.LessOrEqual(t, peak, 2, "at most 2 shards ran at once")
	})

	t.Run("serial waits, discard later refuses, cover early kills", func(t *testing.T) {
		g := s.groupWith("overlap", "local://nap")
		serial := s.job2(service.JobSpec{GroupID: g.ID, Name: "serial", BlockStrategy: "SERIAL_EXECUTION"})
		a, b := s.trigger(serial, ""), s.trigger(serial, "")
		ra, rb := s.waitState(a.ID, kind.RunSucceeded), s.waitState(b.ID, kind.RunSucceeded)
		// The second starts when it is handed to the target, after the
		// wait; its claim (dispatched) may come before the first's outcome
		// is written, and the first's finish is when its process ended,
		// stamped before the outcome's write.
		start := rb.HandedMs
		if start == 0 {
			start = rb.DispatchedMs
		}
		require.GreaterOrEqual(t, start, ra.FinishedMs-5, "the second (higher id) starts after the first ended: %d..%d then %d..%d",
			ra.DispatchedMs, ra.FinishedMs, start, rb.FinishedMs)
		// ... and as soon as it ended, not at the next second's tick (a job
		// whose runs take a fraction of its period then fell a second
		// behind for good). Three pairs: one gap under 300 ms could be
		// the tick's luck, three hardly.
		for range 3 {
			a, b := s.trigger(serial, ""), s.trigger(serial, "")
			ra, rb := s.waitState(a.ID, kind.RunSucceeded), s.waitState(b.ID, kind.RunSucceeded)
			require.Less(t, rb.HandedMs-ra.FinishedMs, int64(300), "the second goes when the first has ended: first ended %d, second handed %d",
				ra.FinishedMs, rb.HandedMs)
		}

		discard := s.job2(service.JobSpec{GroupID: g.ID, Name: "discard", BlockStrategy: "DISCARD_LATER"})
		a = s.trigger(discard, "")
		s.waitState(a.ID, kind.RunRunning)
		rb = s.waitState(s.trigger(discard, "").ID, kind.RunFailed)
		require.Contains(t, rb.Message, "Discard Later")
		s.waitState(a.ID, kind.RunSucceeded)

		cover := s.job2(service.JobSpec{GroupID: g.ID, Name: "cover", BlockStrategy: "COVER_EARLY"})
		a = s.trigger(cover, "")
		s.waitState(a.ID, kind.RunRunning)
		b = s.trigger(cover, "")
		s.waitState(a.ID, kind.RunKilled)
		s.waitState(b.ID, kind.RunSucceeded)
	})
}
