package routes

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/ringjob/ringjob/internal/kind"
)

// cacheValidity is how long the state of round, lfu and lru lives before it is
// cleared as a whole (XXL-JOB: CACHE_VALID_TIME, 24 h).
const cacheValidity = 24 * time.Hour

// DefaultProbeTimeout bounds one Beat or IdleBeat when Options.ProbeTimeout is
// zero (XXL-JOB: xxl.job.timeout, 3 s).
const DefaultProbeTimeout = 3 * time.Second

// Probe kinds recorded in Attempt.Kind.
const (
	KindBeat     = "beat"
	KindIdleBeat = "idle_beat"
)

// Prober asks a target whether it is alive (failover) or idle for a job
// (busyover). targets.Driver satisfies it per target; see RegistryProber.
type Prober interface {
	// Beat returns nil when the target is reachable.
	Beat(ctx context.Context, target string) error
	// IdleBeat returns nil when the target is idle for the job; an error
	// (targets.ErrBusy, or any failure) means "try the next one".
	IdleBeat(ctx context.Context, target string, jobID int64) error
}

// Options configure a Router. Every field is optional.
type Options struct {
	// Clock tells time for the 24 h reset of round, lfu and lru.
	// Default: the real clock.
	Clock clockwork.Clock
	// IntN returns a uniform random int in [0, n) for n > 0. It is always
	// called with the Router's mutex held, so it need not be safe for
	// concurrent use: pass rand.New(rand.NewPCG(1, 2)).IntN for deterministic
	// tests. Default: math/rand/v2's IntN.
	IntN func(n int) int
	// Prober probes targets for failover and busyover. Without one those two
	// strategies fail with ErrNoProber.
	Prober Prober
	// ProbeTimeout bounds each probe: 0 means DefaultProbeTimeout, a negative
	// value means no bound besides the caller's context.
	ProbeTimeout time.Duration
}

// Router picks targets for triggers. Build one per scheduler with New; it is
// safe for concurrent use. Its state (round counters, lfu counts, lru order)
// lives in the instance, keyed by strategy and job id, behind a mutex; it is
// in memory only, so replicas do not share it (as in XXL-JOB).
type Router struct {
	clock        clockwork.Clock
	intn         func(int) int
	prober       Prober
	probeTimeout time.Duration

	mu    sync.Mutex // guards the three states below and every call of intn
	round roundState
	lfu   lfuState
	lru   lruState

	rings ringCache // has its own mutex; rings are immutable once built
}

// New returns a Router with empty state.
func New(o Options) *Router {
	r := &Router{clock: o.Clock, intn: o.IntN, prober: o.Prober, probeTimeout: o.ProbeTimeout}
	if r.clock == nil {
		r.clock = clockwork.NewRealClock()
	}
	if r.intn == nil {
		r.intn = rand.IntN
	}
	if r.probeTimeout == 0 {
		r.probeTimeout = DefaultProbeTimeout
	}
	return r
}

// Attempt records one probe made while picking, for the run's attempt history.
type Attempt struct {
	Target string
	Kind   string // KindBeat or KindIdleBeat
	Err    error  // nil when the target answered alive / idle
}

// Pick is the outcome of routing one trigger.
type Pick struct {
	// Order lists the targets to try, Order[0] first. For failover and
	// busyover it continues with the candidates after the winner (not yet
	// probed), so a dispatcher can move on when a dispatch fails; candidates
	// that failed their probe are left out. For sharding it is every candidate
	// in order and the caller fans out (see ShardTarget). For the other
	// strategies it holds exactly one target.
	Order []string
	// Probes lists the probes made, in order (failover and busyover only).
	Probes []Attempt
}

// Target returns the chosen target, Order[0], or "" when there is none.
func (p Pick) Target() string {
	if len(p.Order) == 0 {
		return ""
	}
	return p.Order[0]
}

// Pick orders the candidates to try for one trigger of jobID under strategy
// (a Ringjob name or an XXL-JOB alias, see Normalize). Candidates are used in
// the order given: XXL-JOB sorts auto-registered executors and keeps manual
// lists as entered, and first, last, round, lfu ties, lru, failover, busyover
// and sharding all depend on that order.
//
// Errors: an unknown strategy (kind.ErrUnknownRoute), no candidates
// (ErrNoCandidates), failover/busyover without a Prober (ErrNoProber), every
// probe failed (*ProbeError, matching ErrNoTargetAvailable), or the context
// ended while probing. On a probe failure the returned Pick still carries the
// Probes made, so the caller can record them.
func (r *Router) Pick(ctx context.Context, strategy kind.Route, jobID int64, candidates []string) (Pick, error) {
	name, err := kind.ParseRoute(string(strategy))
	if err != nil {
		return Pick{}, fmt.Errorf("route job %d: %w", jobID, err)
	}
	if len(candidates) == 0 {
		return Pick{}, fmt.Errorf("route job %d (%s): %w: the job's group has no live executor and no member; start an executor for the group or add a member",
			jobID, name, ErrNoCandidates)
	}
	switch name {
	case kind.RouteFirst:
		return one(candidates[0]), nil
	case kind.RouteLast:
		return one(candidates[len(candidates)-1]), nil
	case kind.RouteRound:
		return one(r.pickRound(jobID, candidates)), nil
	case kind.RouteRandom:
		r.mu.Lock()
		i := r.intn(len(candidates))
		r.mu.Unlock()
		return one(candidates[i]), nil
	case kind.RouteConsistentHash:
		return one(r.rings.get(candidates).lookup(jobID)), nil
	case kind.RouteLFU:
		return one(r.pickLFU(jobID, candidates)), nil
	case kind.RouteLRU:
		return one(r.pickLRU(jobID, candidates)), nil
	case kind.RouteFailover:
		return r.probe(ctx, kind.RouteFailover, jobID, candidates)
	case kind.RouteBusyover:
		return r.probe(ctx, kind.RouteBusyover, jobID, candidates)
	case kind.RouteSharding:
		return Pick{Order: append([]string(nil), candidates...)}, nil
	}
	panic("routes: strategy " + string(name) + " has no implementation") // unreachable: ParseRoute returns only the names above
}

// Forget drops the round, lfu and lru state of a job (for example when the
// job is deleted). State is also cleared as a whole every 24 h.
func (r *Router) Forget(jobID int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.round.count, jobID)
	delete(r.lfu.counts, jobID)
	delete(r.lru.order, jobID)
}

func one(target string) Pick { return Pick{Order: []string{target}} }

// expired implements XXL-JOB's cache clear: when now is past *validUntil
// (zero at start), the caller clears its map and *validUntil moves to
// now + 24 h. Called with r.mu held.
func (r *Router) expired(validUntil *time.Time) bool {
	now := r.clock.Now()
	if now.After(*validUntil) {
		*validUntil = now.Add(cacheValidity)
		return true
	}
	return false
}
