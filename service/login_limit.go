package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"
)

// Password hashing and the login limiter.
//
// A password check is argon2id with 64 MiB: unbounded, a burst of wrong
// logins is a burst of 64 MiB allocations. Checks run in a pool of
// HashConcurrency slots; a login that finds none free is answered at once
// with a *BusyError (503), so excess costs neither memory nor waiting
// goroutines.
//
// Failures are counted under three keys, each with its own free tries
// before an exponential delay (1 s, 2 s, 4 s ... up to LoginMaxDelay):
//
//   - user+address: LoginFreeTries. Guessing one user's password from one
//     address is slowed; the same user from another address is not.
//   - address: AddressFreeTries. One address trying many users.
//   - user, from any address: UserFreeTries, many more than the others, so
//     that nobody can lock a chosen user out with a few wrong passwords, while
//     guessing spread over many addresses is still bounded.
//
// Attempts being checked count as failures until they end, so parallel
// attempts cannot all pass the check before the first failure is written.

// Defaults of the keys' free tries and of the hashing pool.
const (
	DefaultAddressFreeTries = 20
	DefaultUserFreeTries    = 50
	DefaultHashConcurrency  = 2
)

// BusyError answers a login when every password-hashing slot is taken. The
// REST API answers it with 503 and Retry-After.
type BusyError struct {
	RetryAfter time.Duration
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("the server is checking too many passwords at once; try again in %s", e.RetryAfter.Round(time.Second))
}

// loginKey is one key of the limiter with its free tries.
type loginKey struct {
	key  string
	free int
}

// loginKeys are the limiter keys of an attempt for user from addr.
func (s *Service) loginKeys(user, addr string) []loginKey {
	u := foldName(user)
	return []loginKey{
		{limiterKey("user+addr:", u+"|"+addr), s.loginFree},
		{limiterKey("addr:", addr), s.addrFree},
		{limiterKey("user:", u), s.userFree},
	}
}

// limiterKey is a limiter key that fits its column (255 characters): long
// ones are hashed.
func limiterKey(prefix, v string) string {
	if len(prefix)+len(v) <= 255 {
		return prefix + v
	}
	sum := sha256.Sum256([]byte(v))
	return prefix + "sha256:" + hex.EncodeToString(sum[:])
}

// loginsInFlight counts the attempts being checked per key, on this replica,
// and how many have ended (so a count read from the database before an
// attempt ended is known to be stale).
type loginsInFlight struct {
	mu    sync.Mutex
	n     map[string]int
	ended map[string]uint64
}

// reserveLogin refuses an attempt inside the delay of any of keys (counting
// the attempts in flight as failures), else counts it in flight until
// release is called. release must be called after the attempt's failure,
// if any, is written.
func (s *Service) reserveLogin(ctx context.Context, keys []loginKey) (release func(), err error) {
	stored := make([]int, len(keys))
	last := make([]int64, len(keys))
	seen := make([]uint64, len(keys))
	for try := 0; ; try++ {
		s.inflight.mu.Lock()
		for i, k := range keys {
			seen[i] = s.inflight.ended[k.key]
		}
		s.inflight.mu.Unlock()
		for i, k := range keys {
			if stored[i], last[i], err = s.st.LoginFailures(ctx, k.key); err != nil {
				return nil, fmt.Errorf("login: %w", err)
			}
		}
		s.inflight.mu.Lock()
		fresh := true
		for i, k := range keys {
			fresh = fresh && s.inflight.ended[k.key] == seen[i]
		}
		if fresh {
			break // still locked
		}
		s.inflight.mu.Unlock()
		if try == 2 { // attempts keep ending under this one: it waits its turn
			return nil, &ThrottledError{RetryAfter: time.Second}
		}
	}
	defer s.inflight.mu.Unlock()
	now := s.clock.Now()
	for i, k := range keys {
		n := stored[i]
		if n > 0 && now.Sub(time.UnixMilli(last[i])) >= loginFailuresForget {
			n = 0
		}
		busy := s.inflight.n[k.key]
		if n+busy < k.free {
			continue
		}
		if busy > 0 { // past the free tries, one attempt at a time
			return nil, &ThrottledError{RetryAfter: time.Second}
		}
		delay := time.Second << min(n-k.free, 20)
		if delay > s.loginMaxDelay {
			delay = s.loginMaxDelay
		}
		if wait := time.UnixMilli(last[i]).Add(delay).Sub(now); wait > 0 {
			return nil, &ThrottledError{RetryAfter: wait}
		}
	}
	if s.inflight.n == nil {
		s.inflight.n, s.inflight.ended = map[string]int{}, map[string]uint64{}
	}
	for _, k := range keys {
		s.inflight.n[k.key]++
	}
	return func() {
		s.inflight.mu.Lock()
		defer s.inflight.mu.Unlock()
		for _, k := range keys {
			s.inflight.ended[k.key]++
			if s.inflight.n[k.key]--; s.inflight.n[k.key] <= 0 {
				delete(s.inflight.n, k.key)
			}
		}
	}, nil
}

// tryHashSlot takes a password-hashing slot if one is free at once.
func (s *Service) tryHashSlot() (release func(), ok bool) {
	select {
	case s.hashSlots <- struct{}{}:
		return func() { <-s.hashSlots }, true
	default:
		return nil, false
	}
}

// hashSlot waits for a password-hashing slot (for callers already
// authenticated: an admin setting a password).
func (s *Service) hashSlot(ctx context.Context) (release func(), err error) {
	select {
	case s.hashSlots <- struct{}{}:
		return func() { <-s.hashSlots }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for a password-hashing slot: %w", context.Cause(ctx))
	}
}
