package routes

import (
	"context"
	"crypto/md5"
	"fmt"
	"sort"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
)

// refHash is XXL-JOB's hash written as its Java code reads:
// ((d[3]&0xFF)<<24 | (d[2]&0xFF)<<16 | (d[1]&0xFF)<<8 | (d[0]&0xFF)) & 0xffffffffL.
func refHash(key string) int64 {
	d := md5.Sum([]byte(key))
	h := int64(d[3])<<24 | int64(d[2])<<16 | int64(d[1])<<8 | int64(d[0])
	return h & 0xffffffff
}

// refTreeMap is a minimal TreeMap<Long, String>: sorted keys, put overwrites.
type refTreeMap struct {
	keys []int64
	vals []string
}

func (m *refTreeMap) put(k int64, v string) {
	i := sort.Search(len(m.keys), func(i int) bool { return m.keys[i] >= k })
	if i < len(m.keys) && m.keys[i] == k {
		m.vals[i] = v
		return
	}
	m.keys = append(m.keys, 0)
	m.vals = append(m.vals, "")
	copy(m.keys[i+1:], m.keys[i:])
	copy(m.vals[i+1:], m.vals[i:])
	m.keys[i], m.vals[i] = k, v
}

// refHashJob is ExecutorRouteConsistentHash.hashJob.
func refHashJob(jobID int64, addresses []string) string {
	var ring refTreeMap
	for _, a := range addresses {
		for i := 0; i < 100; i++ {
			ring.put(refHash("SHARD-"+a+"-NODE-"+strconv.Itoa(i)), a)
		}
	}
	jobHash := refHash(strconv.FormatInt(jobID, 10))
	for i, k := range ring.keys { // tailMap(jobHash).firstKey()
		if k >= jobHash {
			return ring.vals[i]
		}
	}
	return ring.vals[0] // firstEntry()
}

func TestConsistentHash(t *testing.T) {
	t.Parallel()
	ten := []string{"http://10.0.0.1:9999/", "http://10.0.0.2:9999/", "http://10.0.0.3:9999/"}
	local := []string{"127.0.0.1:9999", "127.0.0.1:9998"}

	t.Run("hash function", func(t *testing.T) {
		t.Parallel()
		// Printed by XXL-JOB's own hash() (Java) and by an independent Python port.
		require.Equal(t, uint32(943901380), Hash("1"))
		require.Equal(t, uint32(2373066440), Hash("2"))
		require.Equal(t, uint32(3905343649), Hash("42"))
		require.Equal(t, uint32(248216706), Hash("12345"))
		require.Equal(t, uint32(1255829671), Hash("SHARD-127.0.0.1:9999-NODE-0"))
		for _, k := range []string{"", "1", "SHARD-x-NODE-99", "ünïcode"} {
			require.Equal(t, refHash(k), int64(Hash(k)), k)
		}
	})

	t.Run("fixed picks verified against XXL-JOB's Java code", func(t *testing.T) {
		t.Parallel()
		// Expected values printed once by ExecutorRouteConsistentHash.hashJob
		// (copied verbatim into a Java file and run) and by a Python port.
		tests := []struct {
			jobID      int64
			candidates []string
			want       string
		}{
			{1, ten, "http://10.0.0.3:9999/"},
			{2, ten, "http://10.0.0.3:9999/"},
			{3, ten, "http://10.0.0.1:9999/"},
			{7, ten, "http://10.0.0.2:9999/"},
			{42, ten, "http://10.0.0.2:9999/"},
			{100, ten, "http://10.0.0.3:9999/"},
			{12345, ten, "http://10.0.0.2:9999/"},
			{1, local, "127.0.0.1:9998"},
			{2, local, "127.0.0.1:9998"},
			{3, local, "127.0.0.1:9999"},
			{1000, local, "127.0.0.1:9999"},
		}
		b := setup(t)
		for _, tt := range tests {
			name := fmt.Sprintf("job %d %v", tt.jobID, tt.candidates)
			require.Equal(t, tt.want, b.pick(t, kind.RouteConsistentHash, tt.jobID, tt.candidates...), name)
			require.Equal(t, tt.want, b.pick(t, "CONSISTENT_HASH", tt.jobID, tt.candidates...), name)
			require.Equal(t, tt.want, refHashJob(tt.jobID, tt.candidates), name)
			require.Equal(t, tt.want, ConsistentHashPick(tt.jobID, tt.candidates), name)
		}
		require.Empty(t, b.rand.calls)
	})

	t.Run("matches the reference implementation", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		lists := [][]string{
			{"only"},
			local,
			ten,
			{"http://b:1/", "http://a:1/", "lambda://eu-west-1/fn", "local://hello", "http://c:1/"},
			{"a", "a", "b"}, // duplicates
		}
		for _, cands := range lists {
			for job := int64(0); job < 300; job++ {
				require.Equal(t, refHashJob(job, cands), b.pick(t, kind.RouteConsistentHash, job, cands...), "job %d %v", job, cands)
			}
		}
		for _, job := range []int64{-1, 1 << 40, 9223372036854775807} {
			require.Equal(t, refHashJob(job, ten), b.pick(t, kind.RouteConsistentHash, job, ten...))
		}
	})

	t.Run("wraps to the lowest node", func(t *testing.T) {
		t.Parallel()
		// Find a job whose hash is above every node of a one-address ring
		// plus one, so that the wrap path is taken with two addresses.
		cands := []string{"x", "y"}
		r := newRing(cands)
		top := r.hashes[len(r.hashes)-1]
		found := false
		for job := int64(0); job < 200000 && !found; job++ {
			if Hash(strconv.FormatInt(job, 10)) > top {
				found = true
				require.Equal(t, r.addrs[0], r.lookup(job))
				require.Equal(t, refHashJob(job, cands), r.lookup(job))
			}
		}
		require.True(t, found, "no job hashes past the top node")
	})

	t.Run("same job same target regardless of candidate order", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rev := []string{ten[2], ten[1], ten[0]}
		for job := int64(0); job < 200; job++ {
			require.Equal(t, b.pick(t, kind.RouteConsistentHash, job, ten...), b.pick(t, kind.RouteConsistentHash, job, rev...))
		}
	})

	t.Run("stable when an address is added or removed", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		five := []string{"http://e1:9999/", "http://e2:9999/", "http://e3:9999/", "http://e4:9999/", "http://e5:9999/"}
		six := append(append([]string(nil), five...), "http://e6:9999/")
		const jobs = 2000
		kept := 0
		for job := int64(1); job <= jobs; job++ {
			before := b.pick(t, kind.RouteConsistentHash, job, five...)
			after := b.pick(t, kind.RouteConsistentHash, job, six...)
			if before == after {
				kept++
			} else {
				require.Equal(t, "http://e6:9999/", after, "job %d moved between old executors", job)
			}
		}
		// Ideal share kept is 5/6 (83 %); 100 virtual nodes keep it close.
		require.Greater(t, kept, jobs*70/100, "kept %d of %d", kept, jobs)
		require.Less(t, kept, jobs*95/100, "the new executor must take some jobs (kept %d of %d)", kept, jobs)

		four := five[1:] // e1 leaves
		for job := int64(1); job <= jobs; job++ {
			before := b.pick(t, kind.RouteConsistentHash, job, five...)
			after := b.pick(t, kind.RouteConsistentHash, job, four...)
			if before != "http://e1:9999/" {
				require.Equal(t, before, after, "job %d moved though its executor stayed", job)
			}
		}
	})

	t.Run("ring cache stays bounded and correct", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for i := range maxCachedRings + 10 {
			cands := []string{"a", "b", fmt.Sprintf("c%d", i)}
			p, err := b.router.Pick(context.Background(), kind.RouteConsistentHash, int64(i), cands)
			require.NoError(t, err)
			require.Equal(t, refHashJob(int64(i), cands), p.Target())
		}
		b.router.rings.mu.Lock()
		n := len(b.router.rings.rings)
		b.router.rings.mu.Unlock()
		require.LessOrEqual(t, n, maxCachedRings)
	})
}

func BenchmarkConsistentHash(b *testing.B) {
	cands := []string{"http://e1:9999/", "http://e2:9999/", "http://e3:9999/", "http://e4:9999/", "http://e5:9999/"}
	ctx := context.Background()
	b.Run("cached", func(b *testing.B) {
		r := New(Options{})
		for i := 0; b.Loop(); i++ {
			_, _ = r.Pick(ctx, kind.RouteConsistentHash, int64(i), cands)
		}
	})
	b.Run("uncached", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			_ = ConsistentHashPick(int64(i), cands)
		}
	})
}
