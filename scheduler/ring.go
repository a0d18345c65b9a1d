package scheduler

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/lifecycle"

	"github.com/jonboulle/clockwork"

	"github.com/ringjob/ringjob/store"
)

// fire is one run waiting in the time ring: everything needed to dispatch it.
type fire struct {
	runID       int64
	scheduledMs int64
	shardIndex  int
	shardTotal  int
	attempt     int
	params      string
	job         *store.Job
	target      string       // a manual trigger's chosen target; "" = route
	trigger     kind.Trigger // the run's trigger type: only schedule fires can misfire
	// claimed: the run is already dispatching and owned by this node (taken
	// over after its claimer, of an earlier version, claimed it and died);
	// its hand-off keeps that claim.
	claimed bool
	// why it waits elsewhere than in its owner's ring (taken over), for the
	// misfire message.
	why string
	// misfire, when set, is why this fire is recorded as misfired instead
	// of sent (decided by the dispatcher when it leaves the ring late).
	misfire string
	// catchUp: a late fire_once_now fire decided to be its job's one
	// catch-up (see misfires.go); sent however late.
	catchUp bool
	// priorHandoffs are the tokens of this fire's hand-off statements whose
	// answer was lost: the next hand-off gets the run if one of them
	// handed it (see store.RunHandOffParams.Prior).
	priorHandoffs []int64
	// turn is the pool task sending it (set on its worker).
	turn *turn
}

// ring holds the runs this node owns until their fire second. A goroutine
// wakes at each second boundary and hands the current slot, and any earlier
// slot it may have missed, to the dispatcher. A run is in the ring at most
// once: pushing a run id that waits already changes nothing (a takeover can
// hand a node back a run it still holds).
type ring struct {
	lifecycle.Loop
	clock  clockwork.Clock
	fireFn func(ctx context.Context, due []fire)

	mu    sync.Mutex
	slots map[int64][]fire // by fire second (unix)
	ids   map[int64]bool   // run ids waiting in slots
	soon  map[int64]bool   // run ids to fire before the next tick (hurry)
	wake  chan struct{}    // capacity 1: soon has runs
}

func newRing(clock clockwork.Clock, fireFn func(ctx context.Context, due []fire)) *ring {
	return &ring{clock: clock, fireFn: fireFn, slots: map[int64][]fire{}, ids: map[int64]bool{},
		soon: map[int64]bool{}, wake: make(chan struct{}, 1)}
}

// hurry fires the given runs, those of them still waiting in the ring and
// already due, without waiting for the next tick.
func (r *ring) hurry(ids ...int64) {
	r.mu.Lock()
	n := 0
	for _, id := range ids {
		if r.ids[id] {
			r.soon[id] = true
			n++
		}
	}
	r.mu.Unlock()
	if n == 0 {
		return
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// takeSoon removes and returns the runs hurry asked for that are due by
// sec, in fire-time order; the others stay for their tick.
func (r *ring) takeSoon(sec int64) []fire {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.soon) == 0 {
		return nil
	}
	var out []fire
	for _, k := range r.dueSlots(sec) {
		kept := r.slots[k][:0]
		for _, f := range r.slots[k] {
			if r.soon[f.runID] {
				out = append(out, f)
				delete(r.ids, f.runID)
			} else {
				kept = append(kept, f)
			}
		}
		if len(kept) == 0 {
			delete(r.slots, k)
		} else {
			r.slots[k] = kept
		}
	}
	clear(r.soon)
	return out
}

// slotOf is the ring second of a fire time; sub-second times round up so a
// run never fires early.
func slotOf(ms int64) int64 {
	return (ms + 999) / 1000
}

// push adds runs to the ring.
func (r *ring) push(fs ...fire) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range fs {
		if r.ids[f.runID] {
			continue
		}
		r.ids[f.runID] = true
		s := slotOf(f.scheduledMs)
		r.slots[s] = append(r.slots[s], f)
	}
}

// has reports whether a run waits in the ring.
func (r *ring) has(id int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ids[id]
}

// Len is the number of runs waiting.
func (r *ring) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ids)
}

// takeDue removes and returns the runs of every slot at or before sec, in
// fire-time order.
func (r *ring) takeDue(sec int64) []fire {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []fire
	for _, k := range r.dueSlots(sec) {
		out = append(out, r.slots[k]...)
		delete(r.slots, k)
	}
	for _, f := range out {
		delete(r.ids, f.runID)
		delete(r.soon, f.runID)
	}
	return out
}

// dueSlots are the seconds of the slots at or before sec, in order; r.mu
// is held.
func (r *ring) dueSlots(sec int64) []int64 {
	var keys []int64
	for k := range r.slots {
		if k <= sec {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// drain empties the ring (graceful stop hands the runs back).
func (r *ring) drain() []fire {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []fire
	for k, fs := range r.slots {
		out = append(out, fs...)
		delete(r.slots, k)
	}
	clear(r.ids)
	clear(r.soon)
	return out
}

func (r *ring) Start(ctx context.Context) {
	r.Loop.Start(ctx, r.run)
}

func (r *ring) Stop() { r.Loop.Stop() }

func (r *ring) run(ctx context.Context) {
	for {
		now := r.clock.Now()
		wait := time.Second - time.Duration(now.UnixNano()%int64(time.Second))
		t := r.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-r.wake:
			t.Stop()
			if due := r.takeSoon(r.clock.Now().Unix()); len(due) > 0 {
				r.fireFn(ctx, due)
			}
		case <-t.Chan():
			r.tick(ctx)
		}
	}
}

// tick fires everything due at the current second.
func (r *ring) tick(ctx context.Context) {
	now := r.clock.Now()
	due := r.takeDue(now.Unix())
	r.fireFn(ctx, due) // also called with no runs, so the backlog is retried
}
