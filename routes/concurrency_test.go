package routes

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
)

// TestConcurrentPick runs Pick from many goroutines on one Router. IntN is a
// seeded *rand.Rand, which is not safe for concurrent use: the race detector
// fails the test if the Router calls it outside its mutex.
func TestConcurrentPick(t *testing.T) {
	t.Parallel()
	prober := newFakeProber()
	prober.dead["b"] = true
	prober.busy["a"] = true
	r := New(Options{IntN: seeded(1).IntN, Prober: prober})
	cands := []string{"a", "b", "c", "d"}

	const goroutines, perG = 32, 250
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		round = map[string]int{}
		lru   = map[string]int{}
	)
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for i := range perG {
				s := kind.Routes()[(g+i)%len(kind.Routes())]
				job := int64(i % 5)
				p, err := r.Pick(ctx, s, job, cands)
				if err != nil {
					errs <- fmt.Errorf("%s: %w", s, err)
					return
				}
				if len(p.Order) == 0 {
					errs <- fmt.Errorf("%s: empty order", s)
					return
				}
				// Jobs 100 and 200 are picked only by these two strategies,
				// so their balance can be checked at the end.
				rp, err := r.Pick(ctx, kind.RouteRound, 100, cands)
				if err != nil {
					errs <- err
					return
				}
				lp, err := r.Pick(ctx, kind.RouteLRU, 200, cands)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				round[rp.Target()]++
				lru[lp.Target()]++
				mu.Unlock()
				if i%50 == 0 {
					r.Forget(job)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// Every pick advanced the shared counter / order exactly once, so each
	// address got a quarter of the picks (±1).
	total := goroutines * perG
	for _, c := range cands {
		require.InDelta(t, total/len(cands), round[c], 1, "round %s", c)
		require.InDelta(t, total/len(cands), lru[c], 1, "lru %s", c)
	}
}
