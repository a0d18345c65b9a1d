package identity

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/internal/lifecycle"
	"github.com/ringjob/ringjob/store"
)

// Defaults of the credential cache and sessions.
const (
	DefaultAuthPoll    = 250 * time.Millisecond
	DefaultSessionIdle = 30 * time.Minute
	DefaultSessionMax  = 12 * time.Hour
)

// Why a credential is refused. Each is an ErrUnauthenticated (errors.Is).
var (
	ErrTokenRevoked   = &authError{"the API token was revoked; create a new one"}
	ErrTokenExpired   = &authError{"the API token has expired; create a new one"}
	ErrOwnerGone      = &authError{"the API token's user or service account was deleted"}
	ErrSessionExpired = &authError{"the session has expired or was logged out; log in again"}
	ErrDisabled       = &authError{"this user or service account is disabled; an admin can enable it again"}
)

type authError struct{ msg string }

func (e *authError) Error() string        { return e.msg }
func (e *authError) Is(target error) bool { return target == ErrUnauthenticated }

// AuthWatcher keeps a replica's credential cache honest: it polls the
// database's auth version (moved on by every change to tokens, sessions,
// principals and role bindings, on any replica) and drops the cache when it
// moves, so a revoked token is refused on every replica within one poll
// interval. It also writes the throttled last-used times. Without a running
// watcher the service caches nothing and asks the database on each request.
type AuthWatcher struct {
	lifecycle.Loop
	svc *Service
}

// credEntry is one cached, checked credential.
type credEntry struct {
	p         *access.Principal
	tokenID   int64
	sessionID int64
	expiresMs int64 // 0 = never (tokens); absolute expiry (sessions)
	lastSeen  atomic.Int64
}

// credCache caches credentials by their hash and the role bindings.
type credCache struct {
	mu       sync.Mutex
	gen      uint64 // moves on each reset; an entry read before a reset is not stored
	version  int64
	entries  map[string]*credEntry
	bindings []store.RoleBinding
	haveBind bool
	groupOf  map[objKey]int64 // job and run id -> group
	watching atomic.Bool
	lastOK   atomic.Int64 // unix ms of the last successful poll
	touches  chan touch
}

type touch struct {
	session bool
	id      int64
	ms      int64
}

func newCredCache() *credCache {
	return &credCache{entries: map[string]*credEntry{}, groupOf: map[objKey]int64{}, touches: make(chan touch, 1024)}
}

// reset drops every cached entry.
func (c *credCache) reset(version int64) {
	c.mu.Lock()
	c.gen++
	c.version = version
	c.entries = map[string]*credEntry{}
	c.bindings, c.haveBind = nil, false
	c.groupOf = map[objKey]int64{}
	c.mu.Unlock()
}

// Watcher returns the service's auth watcher (start it on servers).
func (s *Service) Watcher() *AuthWatcher { return s.watcher }

// Start reads the auth version once, then polls it every AuthPoll.
func (w *AuthWatcher) Start(ctx context.Context) error {
	s := w.svc
	v, err := s.st.AuthVersion(ctx)
	if err != nil {
		return fmt.Errorf("start auth watcher: %w", err)
	}
	s.creds.reset(v)
	s.creds.lastOK.Store(s.nowMs())
	s.creds.watching.Store(true)
	w.Loop.Start(ctx, w.run)
	return nil
}

// Stop ends the polling; the service then asks the database on each request.
func (w *AuthWatcher) Stop() {
	w.svc.creds.watching.Store(false)
	w.Loop.Stop()
	w.flushTouches(context.Background())
}

func (w *AuthWatcher) run(ctx context.Context) {
	s := w.svc
	lastSweep := s.clock.Now()
	for {
		// Touches are written while waiting for the poll, but never put it
		// off: a steady stream of them (many tokens, each a database round
		// trip) would otherwise starve the poll, and the cache would stop
		// being trusted (cacheUsable) and every request read the database.
		t := s.clock.NewTimer(s.authPoll)
	wait:
		for {
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case tc := <-s.creds.touches: // record last use soon, not at the next poll
				s.writeTouch(ctx, tc)
			case <-t.Chan():
				break wait
			}
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		v, err := s.st.AuthVersion(pctx)
		if err != nil {
			s.log.WithError(err).Warn("auth watcher: read auth version")
		} else {
			s.creds.mu.Lock()
			changed := v != s.creds.version
			s.creds.mu.Unlock()
			if changed {
				s.creds.reset(v)
			}
			s.creds.lastOK.Store(s.nowMs())
		}
		// Touches are not flushed here: while requests keep touching, a
		// flush would never end, and neither would the polls' absence.
		if now := s.clock.Now(); now.Sub(lastSweep) >= time.Minute {
			lastSweep = now
			if _, err := s.st.SessionDeleteExpired(pctx, now.UnixMilli(), now.Add(-s.sessionIdle).UnixMilli()); err != nil {
				s.log.WithError(err).Warn("auth watcher: delete expired sessions")
			}
		}
		cancel()
	}
}

func (w *AuthWatcher) flushTouches(ctx context.Context) {
	for {
		select {
		case t := <-w.svc.creds.touches:
			w.svc.writeTouch(ctx, t)
		default:
			return
		}
	}
}

// writeTouch records the last use of a credential.
func (s *Service) writeTouch(ctx context.Context, t touch) {
	var err error
	if t.session {
		err = s.st.SessionTouch(ctx, t.id, t.ms)
	} else {
		err = s.st.TokenTouch(ctx, t.id, t.ms)
	}
	if err != nil {
		s.log.WithError(err).Debug("record last use")
	}
}

// cacheUsable reports whether cached entries may be trusted: the watcher runs
// and its last poll is recent.
func (s *Service) cacheUsable() bool {
	return s.creds.watching.Load() && s.nowMs()-s.creds.lastOK.Load() <= 4*s.authPoll.Milliseconds()+1000
}

// AuthenticateToken returns the principal of an API token. A missing,
// unknown, malformed, revoked or expired token, or one whose owner was
// deleted, is an error matching ErrUnauthenticated that says which.
func (s *Service) AuthenticateToken(ctx context.Context, token string) (*access.Principal, error) {
	if token == "" || len(token) > maxTokenLen {
		return nil, ErrUnauthenticated
	}
	return s.authenticate(ctx, "t:", HashToken(token))
}

// AuthenticateSession returns the principal of a session cookie value.
func (s *Service) AuthenticateSession(ctx context.Context, cookie string) (*access.Principal, error) {
	if cookie == "" || len(cookie) > maxTokenLen {
		return nil, ErrSessionExpired
	}
	return s.authenticate(ctx, "s:", HashToken(cookie))
}

func (s *Service) authenticate(ctx context.Context, kind, hash string) (*access.Principal, error) {
	now := s.nowMs()
	key := kind + hash
	usable := s.cacheUsable()
	var gen uint64
	if usable {
		s.creds.mu.Lock()
		e, ok := s.creds.entries[key]
		gen = s.creds.gen
		s.creds.mu.Unlock()
		if ok {
			return s.checkEntry(e, now)
		}
	}
	e, err := s.loadCred(ctx, kind, hash)
	if err != nil {
		return nil, err
	}
	if usable {
		s.creds.mu.Lock()
		if s.creds.gen == gen {
			s.creds.entries[key] = e
		}
		s.creds.mu.Unlock()
	}
	return s.checkEntry(e, now)
}

// checkEntry applies the expiries and records the use.
func (s *Service) checkEntry(e *credEntry, now int64) (*access.Principal, error) {
	if e.sessionID != 0 {
		if now >= e.expiresMs || now-e.lastSeen.Load() >= s.sessionIdle.Milliseconds() {
			return nil, ErrSessionExpired
		}
	} else if e.expiresMs != 0 && now >= e.expiresMs {
		return nil, ErrTokenExpired
	}
	if last := e.lastSeen.Load(); now-last >= touchEvery.Milliseconds() && e.lastSeen.CompareAndSwap(last, now) {
		t := touch{session: e.sessionID != 0, id: e.tokenID, ms: now}
		if t.session {
			t.id = e.sessionID
		}
		if s.creds.watching.Load() {
			select {
			case s.creds.touches <- t:
			default: // full: the last-used time is a hint, not a record
			}
		} else {
			s.writeTouch(context.Background(), t)
		}
	}
	return e.p, nil
}

func (s *Service) loadCred(ctx context.Context, kind, hash string) (*credEntry, error) {
	if kind == "s:" {
		x, err := s.st.SessionLookup(ctx, hash)
		if errors.Is(err, store.ErrNotFound) {
			return nil, ErrSessionExpired
		}
		if err != nil {
			return nil, fmt.Errorf("authenticate: %w", err)
		}
		pr, err := s.st.PrincipalGet(ctx, x.PrincipalID)
		if errors.Is(err, store.ErrNotFound) {
			return nil, ErrSessionExpired
		}
		if err != nil {
			return nil, fmt.Errorf("authenticate: %w", err)
		}
		if pr.DisabledMs != 0 {
			return nil, ErrDisabled
		}
		p, err := s.principalOf(ctx, pr, access.Principal{SessionID: x.ID, CSRFToken: x.CSRFToken})
		if err != nil {
			return nil, err
		}
		e := &credEntry{p: p, sessionID: x.ID, expiresMs: x.ExpiresMs}
		e.lastSeen.Store(x.LastSeenMs)
		return e, nil
	}
	t, err := s.st.TokenLookup(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrUnauthenticated
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	if t.RevokedMs != 0 {
		return nil, ErrTokenRevoked
	}
	var p *access.Principal
	if t.PrincipalID == 0 {
		var bs []access.Binding
		if t.Role == string(access.RoleAdmin) {
			bs = []access.Binding{{Role: access.RoleAdmin}}
		}
		p = access.NewPrincipal(access.Principal{Name: t.Name, Kind: access.KindToken, TokenID: t.ID, TokenName: t.Name}, bs)
	} else {
		pr, err := s.st.PrincipalGet(ctx, t.PrincipalID)
		if errors.Is(err, store.ErrNotFound) {
			return nil, ErrOwnerGone
		}
		if err != nil {
			return nil, fmt.Errorf("authenticate: %w", err)
		}
		if pr.DisabledMs != 0 {
			return nil, ErrDisabled
		}
		if p, err = s.principalOf(ctx, pr, access.Principal{TokenID: t.ID, TokenName: t.Name}); err != nil {
			return nil, err
		}
	}
	e := &credEntry{p: p, tokenID: t.ID, expiresMs: t.ExpiresMs}
	e.lastSeen.Store(t.LastUsedMs)
	return e, nil
}

// principalOf builds the principal of a stored user or service account from
// its direct bindings and the bindings of its SSO groups.
func (s *Service) principalOf(ctx context.Context, pr store.Principal, base access.Principal) (*access.Principal, error) {
	all, err := s.allBindings(ctx)
	if err != nil {
		return nil, err
	}
	groups := map[string]bool{}
	for _, g := range pr.SSOGroups {
		groups[g] = true
	}
	var mine []access.Binding
	for _, b := range all {
		if (b.PrincipalID != 0 && b.PrincipalID == pr.ID) || (b.SSOGroup != "" && groups[b.SSOGroup]) {
			mine = append(mine, access.Binding{ID: b.ID, Role: access.Role(b.Role), GroupID: b.GroupID, PrincipalID: b.PrincipalID, SSOGroup: b.SSOGroup})
		}
	}
	base.ID = pr.ID
	base.Name = pr.Name
	base.Kind = access.Kind(pr.Kind)
	base.SSOGroups = pr.SSOGroups
	return access.NewPrincipal(base, mine), nil
}

// allBindings returns every role binding, from the cache when it is usable.
func (s *Service) allBindings(ctx context.Context) ([]store.RoleBinding, error) {
	usable := s.cacheUsable()
	var gen uint64
	if usable {
		s.creds.mu.Lock()
		bs, ok := s.creds.bindings, s.creds.haveBind
		gen = s.creds.gen
		s.creds.mu.Unlock()
		if ok {
			return bs, nil
		}
	}
	bs, err := s.st.BindingList(ctx)
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	if usable {
		s.creds.mu.Lock()
		if s.creds.gen == gen {
			s.creds.bindings, s.creds.haveBind = bs, true
		}
		s.creds.mu.Unlock()
	}
	return bs, nil
}

// authChanged is called after a committed change to credentials or bindings:
// this replica forgets at once; the others when their watcher sees the
// version move (the change's transaction bumped it).
func (s *Service) authChanged() {
	s.creds.mu.Lock()
	v := s.creds.version
	s.creds.mu.Unlock()
	s.creds.reset(v) // keep the version: the watcher still notices the bump, harmlessly
}
