package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/ringjob/ringjob/store"
)

// DirectoryTTL is how long a replica trusts its executor directory before
// reading it again. It bounds how late an edit made through another replica
// (a group's executor token or protocol) reaches this one; edits made through
// this replica, and new executors, are seen at once.
const DirectoryTTL = 2 * time.Second

// missRefreshEvery limits the reloads caused by unknown addresses (a static
// http:// member nobody registered would otherwise reload on every dispatch).
const missRefreshEvery = time.Second

// executorDirectory keeps what dispatches and executor requests need to know
// about executors in memory: the app name each address registered under, and
// each app's executor token and protocol. Without it every HTTP dispatch read
// the whole registry and its group's row (two statements per fire).
//
// It is a snapshot of both tables, read again when it is older than
// DirectoryTTL, when this replica changed a group or a registration
// (invalidate), or when an address is not in it (an executor that registered
// through another replica a moment ago). While one caller reads the
// database, the others keep using the previous snapshot when it is merely
// old; the very first read, and reads after a change through this replica
// (which made the snapshot wrong: a rotated executor token), wait for it.
type executorDirectory struct {
	st    *store.Store
	clock clockwork.Clock
	ttl   time.Duration

	mu       sync.Mutex
	snap     *directorySnapshot
	gen      uint64        // bumped by invalidate; a snapshot of an older gen is stale
	loading  chan struct{} // closed when the load in progress ends; nil when none
	lastMiss time.Time
}

type directorySnapshot struct {
	at     time.Time
	gen    uint64
	apps   map[string]string                      // normalized address -> app name
	groups map[string]store.GroupExecutorSettings // app name -> settings
	byID   map[int64]store.GroupExecutorSettings  // group id -> settings
	names  map[int64]string                       // group id -> app name
}

func newExecutorDirectory(st *store.Store, clock clockwork.Clock) *executorDirectory {
	return &executorDirectory{st: st, clock: clock, ttl: DirectoryTTL}
}

// invalidate makes the next lookup read the database again.
func (d *executorDirectory) invalidate() {
	d.mu.Lock()
	d.gen++
	d.mu.Unlock()
}

// current returns a snapshot: the cached one while it is fresh (or while
// someone else is reloading it), else a new one.
func (d *executorDirectory) current(ctx context.Context, force bool) (*directorySnapshot, error) {
	for {
		d.mu.Lock()
		s := d.snap
		fresh := s != nil && s.gen == d.gen && d.clock.Since(s.at) < d.ttl && !force
		// While someone reloads, an old snapshot still serves when it is only
		// old, not when a change made through this replica (invalidate) made
		// it wrong: a rotated executor token must be refused at once.
		current := s != nil && s.gen == d.gen
		if fresh || (current && d.loading != nil) {
			d.mu.Unlock()
			return s, nil
		}
		if wait := d.loading; wait != nil { // the first load, or one after a change: everyone waits for it
			d.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		done := make(chan struct{})
		d.loading = done
		gen := d.gen
		d.mu.Unlock()

		next, err := d.load(ctx, gen)

		d.mu.Lock()
		d.loading = nil
		close(done)
		if err == nil {
			d.snap = next
		}
		prev := d.snap
		d.mu.Unlock()
		if err != nil {
			if prev != nil {
				return prev, nil // keep dispatching with what we knew; the next lookup tries again
			}
			return nil, err
		}
		return next, nil
	}
}

func (d *executorDirectory) load(ctx context.Context, gen uint64) (*directorySnapshot, error) {
	at := d.clock.Now()
	regs, err := d.st.RegistryList(ctx, store.RegistryListParams{})
	if err != nil {
		return nil, fmt.Errorf("load the executor directory: %w", err)
	}
	groups, err := d.st.GroupList(ctx)
	if err != nil {
		return nil, fmt.Errorf("load the executor directory: %w", err)
	}
	s := &directorySnapshot{at: at, gen: gen, apps: make(map[string]string, len(regs)), groups: make(map[string]store.GroupExecutorSettings, len(groups))}
	for _, r := range regs {
		s.apps[normalizeAddress(r.Address)] = r.AppName
	}
	s.byID = make(map[int64]store.GroupExecutorSettings, len(groups))
	s.names = make(map[int64]string, len(groups))
	for _, g := range groups {
		s.groups[g.AppName] = g.GroupExecutorSettings
		s.byID[g.ID] = g.GroupExecutorSettings
		s.names[g.ID] = g.AppName
	}
	return s, nil
}

// settingsByID returns the executor settings of the group with an id; ok is
// false when there is no such group.
func (d *executorDirectory) settingsByID(ctx context.Context, id int64) (store.GroupExecutorSettings, bool, error) {
	g, _, ok, err := d.groupByID(ctx, id)
	return g, ok, err
}

// groupByID returns the executor settings and app name of the group with an
// id; ok is false when there is no such group.
func (d *executorDirectory) groupByID(ctx context.Context, id int64) (g store.GroupExecutorSettings, app string, ok bool, err error) {
	s, err := d.current(ctx, false)
	if err != nil {
		return g, "", false, err
	}
	if g, ok = s.byID[id]; ok {
		return g, s.names[id], true, nil
	}
	return d.groupRead(ctx, id)
}

// groupRead reads group id: one made through another replica a moment ago
// (or written by hand). Runs belong to groups that exist, so this is rare,
// and a snapshot reload may be rate-limited or under way elsewhere. Apart
// from groupByID, which every send calls deep in its goroutine's stack,
// so that the group row read here does not enlarge that frame.
func (d *executorDirectory) groupRead(ctx context.Context, id int64) (g store.GroupExecutorSettings, app string, ok bool, err error) {
	row, err := d.st.GroupGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return g, "", false, nil
	}
	if err != nil {
		return g, "", false, fmt.Errorf("read group %d: %w", id, err)
	}
	return row.GroupExecutorSettings, row.AppName, true, nil
}

// appOf returns the app name an executor address registered under ("" when
// none did), and that app's settings.
func (d *executorDirectory) appOf(ctx context.Context, address string) (app string, g store.GroupExecutorSettings, groupOK bool, err error) {
	addr := normalizeAddress(address)
	s, err := d.current(ctx, false)
	if err != nil {
		return "", g, false, err
	}
	app, ok := s.apps[addr]
	if !ok && d.missAllowed() {
		if s, err = d.current(ctx, true); err != nil {
			return "", g, false, err
		}
		app = s.apps[addr]
	}
	if app == "" {
		return "", g, false, nil
	}
	g, groupOK = s.groups[app]
	return app, g, groupOK, nil
}

// missAllowed rate-limits reloads caused by lookups that found nothing.
func (d *executorDirectory) missAllowed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.clock.Now()
	if now.Sub(d.lastMiss) < missRefreshEvery {
		return false
	}
	d.lastMiss = now
	return true
}

// knows reports whether the directory has address registered under app
// (false when it cannot tell).
func (d *executorDirectory) knows(ctx context.Context, app, address string) bool {
	s, err := d.current(ctx, false)
	return err == nil && s.apps[address] == app
}
