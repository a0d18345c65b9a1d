package routes

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/targets"
)

// t0 is the fake clock's start.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// bundle is what most tests need.
type bundle struct {
	router *Router
	clock  *clockwork.FakeClock
	prober *fakeProber
	rand   *scriptedRand
}

// setup builds a Router with a fake clock, a fake prober and scripted
// randomness (each IntN call returns the next scripted value mod n; when the
// script is empty it returns 0).
func setup(t *testing.T, script ...int) *bundle {
	t.Helper()
	b := &bundle{
		clock:  clockwork.NewFakeClockAt(t0),
		prober: newFakeProber(),
		rand:   &scriptedRand{values: script},
	}
	b.router = New(Options{Clock: b.clock, IntN: b.rand.IntN, Prober: b.prober})
	return b
}

func (b *bundle) pick(t *testing.T, strategy kind.Route, jobID int64, candidates ...string) string {
	t.Helper()
	p, err := b.router.Pick(context.Background(), strategy, jobID, candidates)
	require.NoError(t, err)
	require.NotEmpty(t, p.Order)
	return p.Target()
}

// picks returns n picks of one job.
func (b *bundle) picks(t *testing.T, strategy kind.Route, jobID int64, n int, candidates ...string) []string {
	t.Helper()
	out := make([]string, n)
	for i := range out {
		out[i] = b.pick(t, strategy, jobID, candidates...)
	}
	return out
}

// scriptedRand is a deterministic IntN. It records the n of every call. It is
// deliberately not safe for concurrent use: the Router must call it under its
// mutex, which the race test checks.
type scriptedRand struct {
	values []int
	calls  []int // n of each call
}

func (s *scriptedRand) IntN(n int) int {
	s.calls = append(s.calls, n)
	if len(s.values) == 0 {
		return 0
	}
	v := s.values[0]
	s.values = s.values[1:]
	return v % n
}

// fakeProber fails Beat for dead targets and IdleBeat for dead or busy ones,
// and records every probe.
type fakeProber struct {
	mu    sync.Mutex
	dead  map[string]bool
	busy  map[string]bool
	block map[string]bool // probes of these wait for ctx to end
	log   []string        // "beat a", "idle_beat b 7"
}

func newFakeProber() *fakeProber {
	return &fakeProber{dead: map[string]bool{}, busy: map[string]bool{}, block: map[string]bool{}}
}

var errDead = errors.New("connection refused")

func (p *fakeProber) Beat(ctx context.Context, target string) error {
	p.mu.Lock()
	p.log = append(p.log, "beat "+target)
	dead, block := p.dead[target], p.block[target]
	p.mu.Unlock()
	if block {
		<-ctx.Done()
		return ctx.Err()
	}
	if dead {
		return errDead
	}
	return nil
}

func (p *fakeProber) IdleBeat(ctx context.Context, target string, jobID int64) error {
	p.mu.Lock()
	p.log = append(p.log, fmt.Sprintf("idle_beat %s %d", target, jobID))
	dead, busy, block := p.dead[target], p.busy[target], p.block[target]
	p.mu.Unlock()
	if block {
		<-ctx.Done()
		return ctx.Err()
	}
	if dead {
		return errDead
	}
	if busy {
		return fmt.Errorf("job %d is running on %s: %w", jobID, target, targets.ErrBusy)
	}
	return nil
}

func (p *fakeProber) calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log...)
}

// seeded returns a seeded rand for tests that want a realistic, reproducible sequence.
func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }
