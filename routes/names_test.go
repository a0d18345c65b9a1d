package routes

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNormalize(t *testing.T) {
	t.Parallel()

	t.Run("accepts Ringjob names and XXL-JOB aliases", func(t *testing.T) {
		t.Parallel()
		for in, want := range map[string]string{
			"first": First, "FIRST": First,
			"last": Last, "LAST": Last,
			"round": Round, "ROUND": Round,
			"random": Random, "RANDOM": Random,
			"consistent_hash": ConsistentHash, "CONSISTENT_HASH": ConsistentHash,
			"lfu": LFU, "LEAST_FREQUENTLY_USED": LFU,
			"lru": LRU, "LEAST_RECENTLY_USED": LRU,
			"failover": Failover, "FAILOVER": Failover,
			"busyover": Busyover, "BUSYOVER": Busyover,
			"sharding": Sharding, "SHARDING_BROADCAST": Sharding,
			"  Round ": Round, "SHARDING": Sharding, "Least_Recently_Used": LRU, "LFU": LFU,
		} {
			got, err := Normalize(in)
			require.NoError(t, err, in)
			require.Equal(t, want, got, in)
		}
	})

	t.Run("rejects unknown names and lists the valid ones", func(t *testing.T) {
		t.Parallel()
		for _, in := range []string{"", "round_robin", "ROUND-ROBIN", "hash", "broadcast", "least frequently used"} {
			got, err := Normalize(in)
			require.Error(t, err, in)
			require.Empty(t, got)
			require.True(t, errors.Is(err, ErrUnknownStrategy), in)
			require.Contains(t, err.Error(), "first, last, round, random, consistent_hash, lfu, lru, failover, busyover, sharding")
		}
	})

	t.Run("names titles and XXL-JOB names", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, []string{"first", "last", "round", "random", "consistent_hash", "lfu", "lru", "failover", "busyover", "sharding"}, Names())
		require.Equal(t, "Least Frequently Used", Title("lfu"))
		require.Equal(t, "Sharding Broadcast", Title("SHARDING_BROADCAST"))
		require.Equal(t, "", Title("nope"))
		require.Equal(t, "LEAST_RECENTLY_USED", XXLName("lru"))
		require.Equal(t, "CONSISTENT_HASH", XXLName("CONSISTENT_HASH"))
		require.Equal(t, "", XXLName("nope"))
		for _, n := range Names() {
			require.NotEmpty(t, Title(n))
			back, err := Normalize(XXLName(n))
			require.NoError(t, err)
			require.Equal(t, n, back)
		}
	})
}
