package kind

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseRoute(t *testing.T) {
	t.Parallel()

	t.Run("accepts Ringjob names and XXL-JOB aliases", func(t *testing.T) {
		t.Parallel()
		for in, want := range map[string]Route{
			"first": RouteFirst, "FIRST": RouteFirst,
			"last": RouteLast, "LAST": RouteLast,
			"round": RouteRound, "ROUND": RouteRound,
			"random": RouteRandom, "RANDOM": RouteRandom,
			"consistent_hash": RouteConsistentHash, "CONSISTENT_HASH": RouteConsistentHash,
			"lfu": RouteLFU, "LEAST_FREQUENTLY_USED": RouteLFU,
			"lru": RouteLRU, "LEAST_RECENTLY_USED": RouteLRU,
			"failover": RouteFailover, "FAILOVER": RouteFailover,
			"busyover": RouteBusyover, "BUSYOVER": RouteBusyover,
			"sharding": RouteSharding, "SHARDING_BROADCAST": RouteSharding,
			"  Round ": RouteRound, "SHARDING": RouteSharding, "Least_Recently_Used": RouteLRU, "LFU": RouteLFU,
		} {
			got, err := ParseRoute(in)
			require.NoError(t, err, in)
			require.Equal(t, want, got, in)
		}
	})

	t.Run("rejects unknown names and lists the valid ones", func(t *testing.T) {
		t.Parallel()
		for _, in := range []string{"", "round_robin", "ROUND-ROBIN", "hash", "broadcast", "least frequently used"} {
			got, err := ParseRoute(in)
			require.Error(t, err, in)
			require.Empty(t, got)
			require.True(t, errors.Is(err, ErrUnknownRoute), in)
			require.Contains(t, err.Error(), "first, last, round, random, consistent_hash, lfu, lru, failover, busyover, sharding")
		}
	})

	t.Run("names titles and XXL-JOB names", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, []Route{"first", "last", "round", "random", "consistent_hash", "lfu", "lru", "failover", "busyover", "sharding"}, Routes())
		require.Equal(t, "Least Frequently Used", RouteLFU.Title())
		require.Equal(t, "Sharding Broadcast", RouteSharding.Title())
		require.Equal(t, "", Route("nope").Title())
		require.Equal(t, "LEAST_RECENTLY_USED", RouteLRU.XXLName())
		require.Equal(t, "CONSISTENT_HASH", RouteConsistentHash.XXLName())
		require.Equal(t, "", Route("nope").XXLName())
		require.False(t, Route("SHARDING_BROADCAST").Valid(), "aliases are parsed, not stored")
		for _, n := range Routes() {
			require.True(t, n.Valid())
			require.NotEmpty(t, n.Title())
			back, err := ParseRoute(n.XXLName())
			require.NoError(t, err)
			require.Equal(t, n, back)
		}
	})
}
