package identity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

// Password hashing and the login limiter.
//
// A password check is argon2id with 64 MiB: unbounded, a burst of wrong
// logins is a burst of 64 MiB allocations. Checks run in a pool of
// HashConcurrency slots, one of them kept for attempts from addresses with
// no failure on record; a login that finds no slot free is answered at once
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
//     guessing spread over many addresses is still bounded. A device with a
//     valid proof of recent success for the user (device_proof.go) is
//     exempt from this key, so an attacker who trips it does not lock out
//     the user's own devices.
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

// loginsInFlight counts the attempts being checked per key, on this replica.
type loginsInFlight struct {
	mu sync.Mutex
	n  map[string]int
	// failed counts the failures this replica wrote per key (until a
	// success clears the key): the count used is never below it, even when
	// an attempt ended between another's read of the database and its
	// check, or the read did not show the latest write yet.
	failed map[string]int
	// refused counts, per client address key, the attempts answered busy
	// in the current window: an address that keeps knocking while the pool
	// is full is not clean, although none of its attempts was checked. A
	// person retrying by hand stays well below the threshold.
	refused      map[string]int
	refusedSince time.Time
}

// Busy answers that make an address unclean within a window, and the most
// keys remembered in memory (beyond, the memory starts afresh; the
// database keeps counting failures).
const (
	refusedWindow   = 10 * time.Second
	maxRefusedClean = 5
	maxKeysTracked  = 100_000
)

// noteBusy remembers that an attempt from the address of keys was answered
// busy.
func (s *Service) noteBusy(keys []loginKey) {
	s.inflight.mu.Lock()
	defer s.inflight.mu.Unlock()
	now := s.clock.Now()
	if s.inflight.refused == nil || now.Sub(s.inflight.refusedSince) >= refusedWindow || len(s.inflight.refused) >= maxKeysTracked {
		s.inflight.refused, s.inflight.refusedSince = map[string]int{}, now
	}
	s.inflight.refused[keys[1].key]++
}

// reserveLogin refuses an attempt inside the delay of any of keys (counting
// the attempts in flight as failures), else counts it in flight until
// release is called, with whether the attempt failed (after its failure is
// written) or succeeded.
//
// exemptUser skips the delay of the user-wide key (keys[2]): the attempt
// comes from a device with a proof of recent success for the user. Its
// failures are still counted on every key.
//
// clean says that the client address has no failed login on record (for
// this user or any other), whatever the user's own count, which anyone can
// raise. Such attempts may use the slot kept for them (tryHashSlot).
func (s *Service) reserveLogin(ctx context.Context, keys []loginKey, exemptUser bool) (release func(outcome attemptOutcome), clean bool, err error) {
	stored := make([]int, len(keys))
	last := make([]int64, len(keys))
	for i, k := range keys {
		if stored[i], last[i], err = s.st.LoginFailures(ctx, k.key); err != nil {
			return nil, false, fmt.Errorf("login: %w", err)
		}
	}
	s.inflight.mu.Lock()
	defer s.inflight.mu.Unlock()
	now := s.clock.Now()
	clean = s.inflight.refused[keys[1].key] < maxRefusedClean || now.Sub(s.inflight.refusedSince) >= refusedWindow
	for i, k := range keys {
		if stored[i] > 0 && now.Sub(time.UnixMilli(last[i])) >= loginFailuresForget {
			stored[i] = 0 // forgotten (the next failure starts the row afresh)
			delete(s.inflight.failed, k.key)
		}
		n := max(stored[i], s.inflight.failed[k.key])
		busy := s.inflight.n[k.key]
		clean = clean && (n == 0 || i == 2) // the user's own count is the attacker's to raise
		if n+busy < k.free || (i == 2 && exemptUser) {
			continue
		}
		if busy > 0 { // past the free tries, one attempt at a time
			return nil, false, &ThrottledError{RetryAfter: time.Second}
		}
		delay := time.Second << min(n-k.free, 20)
		if delay > s.loginMaxDelay {
			delay = s.loginMaxDelay
		}
		if wait := time.UnixMilli(last[i]).Add(delay).Sub(now); wait > 0 {
			return nil, false, &ThrottledError{RetryAfter: wait}
		}
	}
	if s.inflight.n == nil {
		s.inflight.n = map[string]int{}
	}
	if s.inflight.failed == nil || len(s.inflight.failed) >= maxKeysTracked {
		s.inflight.failed = map[string]int{}
	}
	for _, k := range keys {
		s.inflight.n[k.key]++
	}
	return func(outcome attemptOutcome) {
		s.inflight.mu.Lock()
		defer s.inflight.mu.Unlock()
		for i, k := range keys {
			if s.inflight.n[k.key]--; s.inflight.n[k.key] <= 0 {
				delete(s.inflight.n, k.key)
			}
			switch {
			case outcome == attemptFailed:
				s.inflight.failed[k.key]++
			case outcome == attemptSucceeded && i == 0: // success clears the user+address key only
				delete(s.inflight.failed, k.key)
			}
		}
	}, clean, nil
}

// attemptOutcome is how a reserved login attempt ended.
type attemptOutcome int

const (
	attemptNotChecked attemptOutcome = iota // no password check (busy, bad input, an error)
	attemptFailed                           // a wrong password, its failure written
	attemptSucceeded
)

// tryHashSlot takes a password-hashing slot if one is free at once. One
// slot of the pool is kept for clean attempts (reserveLogin): attackers
// that keep the others busy from addresses with failures on record do not
// keep out a user signing in from an address without any.
func (s *Service) tryHashSlot(clean bool) (release func(), ok bool) {
	select {
	case s.hashSlots <- struct{}{}:
		return s.freeHashSlot, true
	default:
	}
	if !clean {
		return nil, false
	}
	select {
	case s.cleanSlot <- struct{}{}:
		return func() { debug.FreeOSMemory(); <-s.cleanSlot }, true
	default:
		return nil, false
	}
}

// freeHashSlot gives a slot back once the check's 64 MiB are returned to
// the operating system: left to the garbage collector, each finished check
// stays resident until the heap doubles, and a steady stream of checks
// holds several times the pool's size (measured: 384 MiB peak with 2 slots,
// against about 230 MiB with this).
func (s *Service) freeHashSlot() {
	debug.FreeOSMemory()
	<-s.hashSlots
}

// hashSlot waits for a password-hashing slot (for callers already
// authenticated: an admin setting a password).
func (s *Service) hashSlot(ctx context.Context) (release func(), err error) {
	select {
	case s.hashSlots <- struct{}{}:
		return s.freeHashSlot, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for a password-hashing slot: %w", context.Cause(ctx))
	}
}
