package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
)

// candidates knows the targets a job may run on: the live executors
// registered under its group's app name (sorted, as XXL-JOB does) followed
// by the group's static members (in their order). Groups and registrations
// are cached for a moment so dispatches do not read them every time.
type candidates struct {
	st        *store.Store
	clock     clockwork.Clock
	drivers   *targets.Registry
	ttl       time.Duration
	deadAfter time.Duration // executors silent longer are not candidates

	mu     sync.Mutex
	groups map[int64]cachedGroup
	execs  map[string]cachedExecs
	// refresh lets one lookup at a time go to the database: when an entry
	// expires in a busy second, every worker misses together, and without it
	// they would all read the same rows (a stampede measured in bench/).
	refresh sync.Mutex
}

// cachedGroup holds its group by pointer: every dispatch reads it, and a
// Group is a few hundred bytes to copy onto the sending goroutine's stack.
// Nobody changes a cached group; a newer read replaces it.
type cachedGroup struct {
	g  *store.Group
	at time.Time
}

type cachedExecs struct {
	addrs []string
	at    time.Time
}

func newCandidates(st *store.Store, clock clockwork.Clock, drivers *targets.Registry, deadAfter time.Duration) *candidates {
	return &candidates{st: st, clock: clock, drivers: drivers, ttl: 2 * time.Second, deadAfter: deadAfter,
		groups: map[int64]cachedGroup{}, execs: map[string]cachedExecs{}}
}

// forget drops every cached group and registration list, so the next
// dispatch of each group reads them again (a group was edited or an
// executor registered through this replica). Edits made through another
// replica are seen when the entries expire (ttl).
func (c *candidates) forget() {
	c.mu.Lock()
	c.groups = map[int64]cachedGroup{}
	c.execs = map[string]cachedExecs{}
	c.mu.Unlock()
}

// list returns the job's candidate targets in routing order.
func (c *candidates) list(ctx context.Context, job *store.Job) ([]string, *store.Group, error) {
	g, err := c.group(ctx, job.GroupID)
	if err != nil {
		return nil, nil, fmt.Errorf("load group %d of job %d: %w", job.GroupID, job.ID, err)
	}
	var execs []string
	if g.AcceptRegistrations { // registered executors never join a group that did not ask for them
		if execs, err = c.executors(ctx, g.AppName); err != nil {
			return nil, g, err
		}
	}
	out := make([]string, 0, len(execs)+len(g.Members))
	out = append(out, execs...)
	out = append(out, g.Members...)
	if len(job.PinnedTargets) > 0 {
		out = pinned(out, job.PinnedTargets)
	}
	return out, g, nil
}

// The room a run reserves at insert (store.RunInsert.HandoffRoom) is what
// its row grows by later: the target the hand-off records (the longest of
// its group's targets, or defaultTargetLen when they are not cached yet),
// the longer state, and a short outcome message ('success', 'noop'), so
// the outcome write does not split full pages either. Measured at 10,000
// jobs: without the message's room, p99 205 and 321 ms; with it, 198 and
// 200 ms (docs/benchmarks.md).
const (
	defaultTargetLen   = len("http://10.0.12.34:9999/")
	handoffRoomOutcome = 16
)

// handoffRoomState is how much the state grows at the hand-off.
var handoffRoomState = max(0, len(kind.RunDispatching)-len(kind.RunScheduled))

// HandoffRoom is the room a run reserves when the longest target it may
// be handed to is longestTarget bytes long.
func HandoffRoom(longestTarget int) int {
	return longestTarget + handoffRoomState + handoffRoomOutcome
}

// handoffRooms sizes the room each run reserves at insert; see
// defaultTargetLen. It reads the cache only, expired entries included (a
// size, not a routing decision), so the pre-read's locked transaction never
// waits on it.
func (c *candidates) handoffRooms(runs []store.RunInsert) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rooms := map[int64]int{}
	for i := range runs {
		gid := runs[i].GroupID
		room, ok := rooms[gid]
		if !ok {
			longest := defaultTargetLen
			if e, cached := c.groups[gid]; cached {
				longest = 0
				for _, t := range e.g.Members {
					longest = max(longest, len(t))
				}
				if e.g.AcceptRegistrations {
					for _, t := range c.execs[e.g.AppName].addrs {
						longest = max(longest, len(t))
					}
				}
			}
			room = HandoffRoom(longest)
			rooms[gid] = room
		}
		runs[i].HandoffRoom = room
	}
}

// cached is the group as the cache holds it, however old; false when the
// cache has none.
func (c *candidates) cached(id int64) (*store.Group, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.groups[id]
	return e.g, ok
}

func (c *candidates) group(ctx context.Context, id int64) (*store.Group, error) {
	now := c.clock.Now()
	c.mu.Lock()
	e, ok := c.groups[id]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl {
		return e.g, nil
	}
	return c.groupRead(ctx, id, now)
}

// groupRead is group's cache miss, apart from it so that the group row
// read here is not in the frame of every dispatch.
func (c *candidates) groupRead(ctx context.Context, id int64, now time.Time) (*store.Group, error) {
	c.refresh.Lock()
	defer c.refresh.Unlock()
	c.mu.Lock()
	e, ok := c.groups[id]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl {
		return e.g, nil
	}
	g, err := c.st.GroupGet(ctx, id)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.groups[id] = cachedGroup{g: &g, at: now}
	c.mu.Unlock()
	return &g, nil
}

func (c *candidates) executors(ctx context.Context, app string) ([]string, error) {
	now := c.clock.Now()
	c.mu.Lock()
	e, ok := c.execs[app]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl {
		return e.addrs, nil
	}
	c.refresh.Lock()
	defer c.refresh.Unlock()
	c.mu.Lock()
	e, ok = c.execs[app]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl {
		return e.addrs, nil
	}
	list, err := c.st.RegistryList(ctx, store.RegistryListParams{AppName: app, SinceMs: now.Add(-c.deadAfter).UnixMilli()})
	if err != nil {
		return nil, err
	}
	addrs := make([]string, len(list))
	for i, x := range list {
		addrs[i] = x.Address
	}
	c.mu.Lock()
	c.execs[app] = cachedExecs{addrs: addrs, at: now}
	c.mu.Unlock()
	return addrs, nil
}

// shards is how many runs one fire of the job fans out to: 1 unless it
// routes with sharding; then the live executors registered for its group, as
// XXL-JOB does, or, for groups without executors (functions, local
// commands), the job's shard count. The shards of a fire share its
// scheduled time and carry their index and the total.
func (c *candidates) shards(ctx context.Context, job *store.Job, log *logrus.Entry) int {
	if name, _ := kind.ParseRoute(string(job.RouteStrategy)); name != kind.RouteSharding {
		return 1
	}
	n := max(1, job.ShardCount)
	list, g, err := c.list(ctx, job)
	if err != nil {
		log.WithError(err).WithField("job_id", job.ID).Warn("count the executors to shard over; using the job's shard count")
		return n
	}
	if execs := len(list) - len(g.Members); execs > 0 {
		n = execs
	}
	return n
}

// pinned keeps the candidates that the job pins, in candidate order.
func pinned(cands, pins []string) []string {
	keep := make(map[string]bool, len(pins))
	for _, p := range pins {
		keep[strings.TrimRight(p, "/")] = true
	}
	var out []string
	for _, c := range cands {
		if keep[strings.TrimRight(c, "/")] {
			out = append(out, c)
		}
	}
	return out
}

// ErrTargetNotCandidate is returned when a manual trigger names a target
// that is not among the job's candidates.
var ErrTargetNotCandidate = errors.New("target is not a candidate of the job")

// checkTarget accepts a target for a manual trigger only when it is one of
// the job's known candidates: no requests to arbitrary URLs.
func (c *candidates) checkTarget(ctx context.Context, job *store.Job, target string) (string, error) {
	list, _, err := c.list(ctx, job)
	if err != nil {
		return "", err
	}
	for _, t := range list {
		if strings.TrimRight(t, "/") == strings.TrimRight(target, "/") {
			return t, nil
		}
	}
	return "", fmt.Errorf("%w: %q; the candidates are: %s", ErrTargetNotCandidate, target, strings.Join(list, ", "))
}
