package identity

import (
	"context"
	"errors"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/internal/logs"
	"github.com/ringjob/ringjob/internal/servicekit"
	"github.com/ringjob/ringjob/store"
)

// Options are what a Service is built from.
type Options struct {
	// Store is the storage seam; required.
	Store *store.Store
	// Clock tells time; nil = the real clock.
	Clock clockwork.Clock
	// Log receives warnings of background work (the auth watcher) and of
	// logins; nil discards.
	Log *logrus.Entry
	// Access configures accounts, sessions and the login limiter; zero
	// values take the defaults.
	Access AccessOptions
}

// AccessOptions configure sessions and the credential cache.
type AccessOptions struct {
	// SessionIdle ends a session not used for this long; 0 = DefaultSessionIdle.
	SessionIdle time.Duration
	// SessionMax ends a session this long after login; 0 = DefaultSessionMax.
	SessionMax time.Duration
	// AuthPoll is how often a replica checks for credential changes made on
	// other replicas; 0 = DefaultAuthPoll.
	AuthPoll time.Duration
	// LoginFreeTries failed logins per user and client address are free;
	// later ones wait an exponential delay. 0 = DefaultLoginFreeTries.
	LoginFreeTries int
	// AddressFreeTries: the same per client address, whatever the user;
	// 0 = DefaultAddressFreeTries.
	AddressFreeTries int
	// UserFreeTries: the same per user, from any address; 0 =
	// DefaultUserFreeTries. Higher than the others so that a few wrong
	// passwords cannot lock a chosen user out.
	UserFreeTries int
	// HashConcurrency bounds the password checks (argon2id, 64 MiB each)
	// running at once; a login beyond it is answered 503 at once. 0 =
	// DefaultHashConcurrency.
	HashConcurrency int
	// LoginMaxDelay caps that delay; 0 = DefaultLoginMaxDelay.
	LoginMaxDelay time.Duration
	// DeviceProofTTL is how long a successful password login exempts its
	// device from the user-wide login limit (device_proof.go); 0 =
	// DefaultDeviceProofTTL.
	DeviceProofTTL time.Duration
	// PasswordHash are the argon2id costs of new password hashes; zero =
	// access.DefaultHashParams. Tests lower them.
	PasswordHash access.HashParams
}

// Service is the identity half of the service layer: users, service
// accounts, API tokens, sessions, role bindings, password and SSO logins
// and the login limiter, with the replica's credential cache. It is safe
// for concurrent use.
type Service struct {
	st    *store.Store
	clock clockwork.Clock
	log   *logrus.Entry

	creds          *credCache
	watcher        *AuthWatcher
	authPoll       time.Duration
	sessionIdle    time.Duration
	sessionMax     time.Duration
	loginFree      int
	addrFree       int
	userFree       int
	loginMaxDelay  time.Duration
	inflight       loginsInFlight
	hashSlots      chan struct{} // one per password check that may run, but
	cleanSlot      chan struct{} // the one kept for clean attempts (tryHashSlot)
	hashCost       access.HashParams
	devKey         deviceProofKey
	deviceProofTTL time.Duration
}

// New builds a Service. It panics when Store is nil, which is a wiring
// mistake, not an input error.
func New(o Options) *Service {
	if o.Store == nil {
		panic("identity.New: Store is required")
	}
	clock := o.Clock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	a := o.Access
	s := &Service{st: o.Store, clock: clock, log: logs.OrDiscard(o.Log),
		creds: newCredCache(), authPoll: orDur(a.AuthPoll, DefaultAuthPoll), sessionIdle: orDur(a.SessionIdle, DefaultSessionIdle),
		sessionMax: orDur(a.SessionMax, DefaultSessionMax), loginFree: orInt(a.LoginFreeTries, DefaultLoginFreeTries),
		addrFree: orInt(a.AddressFreeTries, DefaultAddressFreeTries), userFree: orInt(a.UserFreeTries, DefaultUserFreeTries),
		loginMaxDelay: orDur(a.LoginMaxDelay, DefaultLoginMaxDelay), hashCost: a.PasswordHash,
		deviceProofTTL: orDur(a.DeviceProofTTL, DefaultDeviceProofTTL)}
	slots := orInt(a.HashConcurrency, DefaultHashConcurrency)
	s.cleanSlot = make(chan struct{}, 1)
	s.hashSlots = make(chan struct{}, max(1, slots-1))
	s.watcher = &AuthWatcher{svc: s}
	return s
}

func orInt(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

func orDur(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func (s *Service) nowMs() int64 { return s.clock.Now().UnixMilli() }

// AuthChanged drops this replica's cached credentials, bindings and object
// groups at once. Call it after committing a change that moved the auth
// version on (store.AuthVersionBump) outside this package, such as a job
// moved to another group; the other replicas notice the version.
func (s *Service) AuthChanged() { s.authChanged() }

// ErrUnauthenticated is returned for a missing or unknown credential. The
// REST API answers it with 401.
var ErrUnauthenticated = errors.New("the API token is missing or not valid")

// Audit actions of accounts and credentials, "object.verb".
const (
	ActUserCreate    = "user.create"
	ActUserDelete    = "user.delete"
	ActUserPassword  = "user.password"
	ActUserUpdate    = "user.update"
	ActServiceUpdate = "service_account.update"
	ActServiceCreate = "service_account.create"
	ActServiceDelete = "service_account.delete"
	ActTokenCreate   = "token.create"
	ActTokenRevoke   = "token.revoke"
	ActBindingCreate = "role_binding.create"
	ActBindingDelete = "role_binding.delete"
	ActLogin         = "login"
	ActLoginFailed   = "login.failed"
	// ActLoginThrottled: a login refused by the limiter before any check.
	ActLoginThrottled = "login.throttled"
	ActLogout         = "logout"
)

// The shared vocabulary of service layers (servicekit), under the names the
// code of this package was written with.

type auditEntry = servicekit.AuditEntry

func (s *Service) audit(ctx context.Context, tx *store.Store, e auditEntry) error {
	return servicekit.Audit(ctx, tx, s.nowMs(), e)
}

func invalid(field, format string, args ...any) *servicekit.ValidationError {
	return servicekit.Invalid(field, format, args...)
}

func notFoundOr(err error, resource string, id int64, doing string) error {
	return servicekit.NotFoundOr(err, resource, id, doing)
}

func checkText(field, v string, minChars, maxChars int, multiline bool) error {
	return servicekit.CheckText(field, v, minChars, maxChars, multiline)
}

func pageLimit(limit int) (int, error) { return servicekit.PageLimit(limit) }

func decodeCursor(kind, cursor string) (int64, error) { return servicekit.DecodeCursor(kind, cursor) }

func paginate[T any](items []T, limit int, kind string, idOf func(T) int64) servicekit.Page[T] {
	return servicekit.Paginate(items, limit, kind, idOf)
}
