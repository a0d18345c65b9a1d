package routes

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
)

func TestLFU(t *testing.T) {
	t.Parallel()
	abc := []string{"a", "b", "c"}

	t.Run("new addresses start at random(n), pick the lowest then add one", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 2, 0, 1) // a=2 b=0 c=1
		require.Equal(t, []string{"b", "b", "c", "a", "b", "c", "a", "b", "c"}, b.picks(t, kind.RouteLFU, 1, 9, abc...))
		require.Equal(t, []int{3, 3, 3}, b.rand.calls, "one draw per new address, over the candidate count")
		require.Equal(t, map[string]int{"a": 4, "b": 4, "c": 4}, b.router.lfu.counts[1])
	})

	t.Run("XXL alias", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 1, 0)
		require.Equal(t, "b", b.pick(t, "LEAST_FREQUENTLY_USED", 1, "a", "b"))
	})

	t.Run("vanished addresses are dropped and new ones join at random", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 0, 0, 0)
		b.picks(t, kind.RouteLFU, 1, 9, abc...) // a=3 b=3 c=3
		b.rand.values = []int{1}                // d joins at 1
		require.Equal(t, []string{"d", "d", "b", "c"}, b.picks(t, kind.RouteLFU, 1, 4, "b", "c", "d"))
		require.Equal(t, map[string]int{"b": 4, "c": 4, "d": 3}, b.router.lfu.counts[1])
		b.rand.values = []int{0} // a joins again, at 0
		require.Equal(t, "a", b.pick(t, kind.RouteLFU, 1, "a", "b", "c", "d"))
		require.Equal(t, 4, b.rand.calls[len(b.rand.calls)-1], "random over the new candidate count")
	})

	t.Run("ties go to the first candidate", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 1, 1, 1)
		require.Equal(t, []string{"c", "b", "a", "c"}, b.picks(t, kind.RouteLFU, 1, 4, "c", "b", "a"))
	})

	t.Run("counts above 1 000 000 are re-randomised", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 0, 0)
		b.pick(t, kind.RouteLFU, 1, "a", "b") // a=1 b=0
		b.router.lfu.counts[1]["a"] = 1_000_000
		b.router.lfu.counts[1]["b"] = 1_000_001
		b.rand.values = []int{1}
		// a is not above the limit, b is: b restarts at 1 and wins.
		require.Equal(t, "b", b.pick(t, kind.RouteLFU, 1, "a", "b"))
		require.Equal(t, map[string]int{"a": 1_000_000, "b": 2}, b.router.lfu.counts[1])
	})

	t.Run("state per job", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 0, 1, 1, 0)
		require.Equal(t, "a", b.pick(t, kind.RouteLFU, 1, "a", "b")) // job 1: a=0 b=1
		require.Equal(t, "b", b.pick(t, kind.RouteLFU, 2, "a", "b")) // job 2: a=1 b=0
		require.Equal(t, "a", b.pick(t, kind.RouteLFU, 1, "a", "b")) // job 1: a=1 b=1 → tie → a
		require.Equal(t, "a", b.pick(t, kind.RouteLFU, 2, "a", "b")) // job 2: a=1 b=1 → a
	})

	t.Run("clears every 24 h of the clock", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 0, 5)
		require.Equal(t, "a", b.pick(t, kind.RouteLFU, 1, "a", "b")) // a=0→1, b=5%2=1
		b.clock.Advance(24 * time.Hour)
		require.Equal(t, "a", b.pick(t, kind.RouteLFU, 1, "a", "b")) // kept: a=1 b=1 → a
		require.Len(t, b.rand.calls, 2)
		b.clock.Advance(time.Nanosecond)
		b.rand.values = []int{1, 0}
		require.Equal(t, "b", b.pick(t, kind.RouteLFU, 1, "a", "b")) // cleared: a=1 b=0
		require.Len(t, b.rand.calls, 4)
	})

	t.Run("Forget", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 0, 1)
		b.pick(t, kind.RouteLFU, 1, "a", "b")
		b.router.Forget(1)
		require.NotContains(t, b.router.lfu.counts, int64(1))
	})
}

func TestLRU(t *testing.T) {
	t.Parallel()

	t.Run("sequence matches XXL-JOB's LinkedHashMap router", func(t *testing.T) {
		t.Parallel()
		// Printed by ExecutorRouteLRU.route (Java, accessOrder=true) for these lists.
		b := setup(t)
		var got []string
		for range 4 {
			got = append(got, b.pick(t, kind.RouteLRU, 1, "a", "b", "c"))
		}
		for range 3 {
			got = append(got, b.pick(t, kind.RouteLRU, 1, "b", "c", "d")) // a vanishes, d joins at the end
		}
		for range 2 {
			got = append(got, b.pick(t, "LEAST_RECENTLY_USED", 1, "d", "a"))
		}
		for range 3 {
			got = append(got, b.pick(t, kind.RouteLRU, 1, "c", "d", "a"))
		}
		require.Equal(t, []string{"a", "b", "c", "a", "b", "c", "d", "d", "a", "d", "a", "c"}, got)
		require.Empty(t, b.rand.calls, "lru draws no randomness")
	})

	t.Run("state per job", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.Equal(t, "a", b.pick(t, kind.RouteLRU, 1, "a", "b", "c"))
		require.Equal(t, "b", b.pick(t, kind.RouteLRU, 1, "a", "b", "c"))
		require.Equal(t, "a", b.pick(t, kind.RouteLRU, 2, "a", "b", "c"))
		require.Equal(t, "c", b.pick(t, kind.RouteLRU, 1, "a", "b", "c"))
		require.Equal(t, "b", b.pick(t, kind.RouteLRU, 2, "a", "b", "c"))
	})

	t.Run("clears every 24 h of the clock", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.Equal(t, []string{"a", "b"}, b.picks(t, kind.RouteLRU, 1, 2, "a", "b", "c"))
		b.clock.Advance(24 * time.Hour)
		require.Equal(t, "c", b.pick(t, kind.RouteLRU, 1, "a", "b", "c"))
		b.clock.Advance(time.Nanosecond)
		require.Equal(t, "a", b.pick(t, kind.RouteLRU, 1, "a", "b", "c"), "order starts over")
	})

	t.Run("Forget", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.Equal(t, "a", b.pick(t, kind.RouteLRU, 1, "a", "b"))
		b.router.Forget(1)
		require.Equal(t, "a", b.pick(t, kind.RouteLRU, 1, "a", "b"))
	})
}
