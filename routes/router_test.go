package routes

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
)

func TestPickErrors(t *testing.T) {
	t.Parallel()

	t.Run("empty candidates is an error for every strategy", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for _, s := range append(kind.Routes(), "ROUND", "SHARDING_BROADCAST") {
			for _, cands := range [][]string{nil, {}} {
				p, err := b.router.Pick(context.Background(), s, 7, cands)
				require.ErrorIs(t, err, ErrNoCandidates, s)
				require.Contains(t, err.Error(), "job 7")
				require.Contains(t, err.Error(), "no candidate targets")
				require.Empty(t, p.Order)
				require.Empty(t, p.Probes)
			}
		}
		require.Empty(t, b.prober.calls())
	})

	t.Run("unknown strategy", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.router.Pick(context.Background(), "round_robin", 7, []string{"a"})
		require.ErrorIs(t, err, kind.ErrUnknownRoute)
		require.Contains(t, err.Error(), `"round_robin"`)
	})

	t.Run("failover and busyover without a prober", func(t *testing.T) {
		t.Parallel()
		r := New(Options{})
		for _, s := range []kind.Route{kind.RouteFailover, kind.RouteBusyover} {
			_, err := r.Pick(context.Background(), s, 7, []string{"a"})
			require.ErrorIs(t, err, ErrNoProber, s)
		}
	})
}

func TestFirstLast(t *testing.T) {
	t.Parallel()
	tests := []struct {
		strategy   kind.Route
		candidates []string
		want       string
	}{
		{kind.RouteFirst, []string{"a"}, "a"},
		{kind.RouteFirst, []string{"a", "b", "c"}, "a"},
		{"FIRST", []string{"c", "b", "a"}, "c"},
		{kind.RouteLast, []string{"a"}, "a"},
		{kind.RouteLast, []string{"a", "b", "c"}, "c"},
		{"LAST", []string{"c", "b", "a"}, "a"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %v", tt.strategy, tt.candidates), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			for range 3 {
				p, err := b.router.Pick(context.Background(), tt.strategy, 1, tt.candidates)
				require.NoError(t, err)
				require.Equal(t, []string{tt.want}, p.Order)
				require.Empty(t, p.Probes)
			}
			require.Empty(t, b.rand.calls, "first and last draw no randomness")
		})
	}
}

func TestRound(t *testing.T) {
	t.Parallel()
	abc := []string{"a", "b", "c"}

	t.Run("starts at random 0..99 then adds one per trigger", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 98)
		// count = 98, 99, 100, 101, 102 → index 2, 0, 1, 2, 0
		require.Equal(t, []string{"c", "a", "b", "c", "a"}, b.picks(t, kind.RouteRound, 1, 5, abc...))
		require.Equal(t, []int{100}, b.rand.calls, "one draw in [0,100) for the first trigger only")
	})

	t.Run("XXL alias and a changing candidate list share the counter", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 4)
		require.Equal(t, "b", b.pick(t, "ROUND", 1, abc...))                     // 4 % 3
		require.Equal(t, "b", b.pick(t, kind.RouteRound, 1, "a", "b", "c", "d")) // 5 % 4 = 1
		require.Equal(t, "a", b.pick(t, kind.RouteRound, 1, "a", "b"))           // 6 % 2
	})

	t.Run("counter per job", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 0, 50)
		require.Equal(t, "a", b.pick(t, kind.RouteRound, 1, abc...)) // job 1: 0
		require.Equal(t, "c", b.pick(t, kind.RouteRound, 2, abc...)) // job 2: 50 % 3 = 2
		require.Equal(t, "b", b.pick(t, kind.RouteRound, 1, abc...)) // job 1: 1
		require.Equal(t, "a", b.pick(t, kind.RouteRound, 2, abc...)) // job 2: 51 % 3 = 0
		require.Equal(t, "c", b.pick(t, kind.RouteRound, 1, abc...)) // job 1: 2
	})

	t.Run("clears every 24 h of the clock", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 10, 20, 30)
		require.Equal(t, "b", b.pick(t, kind.RouteRound, 1, abc...)) // 10, clock window set to t0+24h
		require.Equal(t, "c", b.pick(t, kind.RouteRound, 1, abc...)) // 11
		b.clock.Advance(24 * time.Hour)                              // now == t0+24h: not yet past
		require.Equal(t, "a", b.pick(t, kind.RouteRound, 1, abc...)) // 12
		b.clock.Advance(time.Nanosecond)                             // past: cleared
		require.Equal(t, "c", b.pick(t, kind.RouteRound, 1, abc...)) // 20 % 3
		require.Equal(t, "a", b.pick(t, kind.RouteRound, 1, abc...)) // 21
		require.Equal(t, []int{100, 100}, b.rand.calls)
		b.clock.Advance(24*time.Hour + time.Second)
		require.Equal(t, "a", b.pick(t, kind.RouteRound, 1, abc...)) // 30 % 3
	})

	t.Run("Forget drops a job's counter", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 1, 2)
		require.Equal(t, "b", b.pick(t, kind.RouteRound, 1, abc...))
		b.router.Forget(1)
		require.Equal(t, "c", b.pick(t, kind.RouteRound, 1, abc...))
	})
}

func TestRoundLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, 0, 5)
	abc := []string{"a", "b", "c"}
	b.pick(t, kind.RouteRound, 1, abc...)
	b.router.round.count[1] = 1_000_000 // not above the limit: the next is +1
	require.Equal(t, abc[1_000_001%3], b.pick(t, kind.RouteRound, 1, abc...))
	require.Equal(t, 1_000_001, b.router.round.count[1])
	// above the limit: restart at random (5)
	require.Equal(t, "c", b.pick(t, kind.RouteRound, 1, abc...))
	require.Equal(t, 5, b.router.round.count[1])
}

func TestRandom(t *testing.T) {
	t.Parallel()

	t.Run("uses IntN over the candidate count", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 2, 0, 1, 4)
		require.Equal(t, []string{"c", "a", "b", "b"}, b.picks(t, kind.RouteRandom, 1, 4, "a", "b", "c"))
		require.Equal(t, []int{3, 3, 3, 3}, b.rand.calls)
	})

	t.Run("seeded sequence is reproducible", func(t *testing.T) {
		t.Parallel()
		cands := []string{"a", "b", "c", "d", "e"}
		ref := seeded(42)
		r := New(Options{IntN: seeded(42).IntN})
		for range 50 {
			p, err := r.Pick(context.Background(), kind.RouteRandom, 1, cands)
			require.NoError(t, err)
			require.Equal(t, cands[ref.IntN(len(cands))], p.Target())
		}
	})

	t.Run("roughly uniform", func(t *testing.T) {
		t.Parallel()
		r := New(Options{IntN: seeded(7).IntN})
		cands := []string{"a", "b", "c", "d"}
		seen := map[string]int{}
		for range 4000 {
			p, err := r.Pick(context.Background(), "RANDOM", 1, cands)
			require.NoError(t, err)
			seen[p.Target()]++
		}
		for _, c := range cands {
			require.InDelta(t, 1000, seen[c], 150, c)
		}
	})
}

func TestSharding(t *testing.T) {
	t.Parallel()

	t.Run("Pick returns every candidate in order", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		cands := []string{"c", "a", "b"}
		p, err := b.router.Pick(context.Background(), "SHARDING_BROADCAST", 1, cands)
		require.NoError(t, err)
		require.Equal(t, []string{"c", "a", "b"}, p.Order)
		p.Order[0] = "x"
		require.Equal(t, "c", cands[0], "Order is a copy")
	})

	t.Run("ShardTarget as XXL-JOB", func(t *testing.T) {
		t.Parallel()
		cands := []string{"a", "b", "c"}
		for i, want := range map[int]string{0: "a", 1: "b", 2: "c", 3: "a", 99: "a", -1: "a"} {
			require.Equal(t, want, ShardTarget(cands, i), i)
		}
		require.Equal(t, "", ShardTarget(nil, 0))
		require.Equal(t, []string{"a", "b", "c"}, ShardTargets(cands, 0))
		require.Equal(t, []string{"a", "b", "c", "a", "a"}, ShardTargets(cands, 5))
		require.Equal(t, []string{"a", "b"}, ShardTargets(cands, 2))
		require.Nil(t, ShardTargets(nil, 3))
	})
}

func TestPickTarget(t *testing.T) {
	t.Parallel()
	require.Equal(t, "", Pick{}.Target())
	require.Equal(t, "x", Pick{Order: []string{"x", "y"}}.Target())
}

func TestErrorsWrap(t *testing.T) {
	t.Parallel()
	pe := &ProbeError{Strategy: kind.RouteBusyover, JobID: 3, Attempts: []Attempt{{Target: "a", Kind: KindIdleBeat, Err: errDead}}}
	require.True(t, errors.Is(pe, ErrNoTargetAvailable))
	require.Equal(t, "busyover: no idle target for job 3 among 1 candidate(s): idle_beat a: connection refused", pe.Error())
}
