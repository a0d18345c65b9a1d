package routes

import (
	"crypto/md5"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// VirtualNodes is the number of ring nodes per address
// (XXL-JOB ExecutorRouteConsistentHash: VIRTUAL_NODE_NUM).
const VirtualNodes = 100

// maxCachedRings bounds the ring cache; when it is full it starts over.
const maxCachedRings = 256

// Hash is XXL-JOB's consistent-hash function: the MD5 of the UTF-8 key, whose
// bytes 0..3 read little-endian give an unsigned 32-bit value
// ((d[3]<<24 | d[2]<<16 | d[1]<<8 | d[0]) & 0xffffffff).
func Hash(key string) uint32 {
	d := md5.Sum([]byte(key))
	return binary.LittleEndian.Uint32(d[:4])
}

// nodeKey is the key of virtual node i of an address: "SHARD-{address}-NODE-{i}".
func nodeKey(address string, i int) string {
	return "SHARD-" + address + "-NODE-" + strconv.Itoa(i)
}

// ring is the sorted equivalent of XXL-JOB's TreeMap<Long, String>.
type ring struct {
	hashes []uint32 // ascending, unique
	addrs  []string // addrs[i] owns hashes[i]
}

// newRing builds the ring. On a hash collision the later put wins, as with
// TreeMap.put: the address that comes later in the candidate list (or the
// later node of the same address) owns the point.
func newRing(candidates []string) *ring {
	owner := make(map[uint32]string, len(candidates)*VirtualNodes)
	for _, a := range candidates {
		for i := 0; i < VirtualNodes; i++ {
			owner[Hash(nodeKey(a, i))] = a
		}
	}
	r := &ring{hashes: make([]uint32, 0, len(owner)), addrs: make([]string, 0, len(owner))}
	for h := range owner {
		r.hashes = append(r.hashes, h)
	}
	slices.Sort(r.hashes)
	for _, h := range r.hashes {
		r.addrs = append(r.addrs, owner[h])
	}
	return r
}

// lookup returns the owner of the first node whose hash is ≥ the job's hash
// (TreeMap.tailMap(jobHash).firstKey()), wrapping to the lowest node.
func (r *ring) lookup(jobID int64) string {
	h := Hash(strconv.FormatInt(jobID, 10))
	i, _ := slices.BinarySearch(r.hashes, h)
	if i == len(r.hashes) {
		i = 0
	}
	return r.addrs[i]
}

// ringCache keeps the rings of recently seen candidate lists: jobs of one
// group share a list, and a ring costs 100 MD5 sums per address to build.
type ringCache struct {
	mu    sync.Mutex
	rings map[string]*ring
}

func (c *ringCache) get(candidates []string) *ring {
	key := strings.Join(candidates, "\x00")
	c.mu.Lock()
	r, ok := c.rings[key]
	c.mu.Unlock()
	if ok {
		return r
	}
	r = newRing(candidates) // outside the lock; a concurrent duplicate build is harmless
	c.mu.Lock()
	if c.rings == nil || len(c.rings) >= maxCachedRings {
		c.rings = map[string]*ring{}
	}
	c.rings[key] = r
	c.mu.Unlock()
	return r
}

// ConsistentHashPick returns the address CONSISTENT_HASH picks for jobID among
// candidates without touching any Router state ("" when candidates is empty).
// Exposed for previews ("which executor will this job go to?").
func ConsistentHashPick(jobID int64, candidates []string) string {
	if len(candidates) == 0 {
		return ""
	}
	return newRing(candidates).lookup(jobID)
}
