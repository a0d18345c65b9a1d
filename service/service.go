package service

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/jonboulle/clockwork"

	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/internal/logs"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
)

// Triggerer starts a run now. *scheduler.Scheduler satisfies it.
type Triggerer interface {
	Trigger(ctx context.Context, p scheduler.TriggerParams) (store.Run, bool, error)
}

var _ Triggerer = (*scheduler.Scheduler)(nil)

// Options are what a Service is built from.
type Options struct {
	// Store is the storage seam; required.
	Store *store.Store
	// Scheduler triggers runs by hand; nil makes TriggerJob return ErrNoScheduler.
	Scheduler Triggerer
	// Drivers validates group members and reaches a run's target to kill it
	// or read its log; required.
	Drivers *targets.Registry
	// Clock tells time; nil = the real clock.
	Clock clockwork.Clock
	// AlarmChannels are the alarm channel names the server declares; a job
	// may name only these. Empty: the names of Alarms.
	AlarmChannels []string
	// Alarms lists the alarm channels and sends test alarms through them
	// (the console's Administration page); nil: no channel can be tested.
	Alarms AlarmChannels
	// OnGroupChange, when set, is called after a group was created, changed
	// or deleted, so that caches of groups (dispatch candidates, executor
	// tokens) are dropped at once on this replica.
	OnGroupChange func()
	// JobScanWindow is how many jobs one page of a job list filtered by name
	// or enabled looks at (0 = 20,000).
	JobScanWindow int
	// RunScanWindow is how many runs (by id) one page of a run list
	// filtered by target looks at (0 = 100,000).
	RunScanWindow int
	// Log receives warnings of background work (the auth watcher); nil discards.
	Log *logrus.Entry
	// Access configures accounts, sessions and the login limiter; zero
	// values take the defaults.
	Access AccessOptions
	// RegisteredElsewhere, when set, tells whether an executor of a group
	// other than appName registered an address; such an address is refused
	// as a static member of appName (Executors.RegisteredElsewhere).
	RegisteredElsewhere func(ctx context.Context, appName, address string) (bool, error)
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
	// PasswordHash are the argon2id costs of new password hashes; zero =
	// access.DefaultHashParams. Tests lower them.
	PasswordHash access.HashParams
}

// Service is the one service layer over groups, jobs, runs and API tokens.
// It is safe for concurrent use.
type Service struct {
	st       *store.Store
	trig     Triggerer
	drivers  *targets.Registry
	clock    clockwork.Clock
	channels map[string]bool
	alarms   AlarmChannels
	changed  func()
	window   int
	runScan  int
	log      *logrus.Entry

	creds         *credCache
	watcher       *AuthWatcher
	authPoll      time.Duration
	sessionIdle   time.Duration
	sessionMax    time.Duration
	loginFree     int
	addrFree      int
	userFree      int
	loginMaxDelay time.Duration
	inflight      loginsInFlight
	hashSlots     chan struct{} // one per password check that may run, but
	cleanSlot     chan struct{} // the one kept for clean attempts (tryHashSlot)
	hashCost      access.HashParams
	// registeredElsewhere: see Options.RegisteredElsewhere (nil: no check).
	registeredElsewhere func(ctx context.Context, appName, address string) (bool, error)
}

// New builds a Service. It panics when Store or Drivers is nil, which is a
// wiring mistake, not an input error.
func New(o Options) *Service {
	if o.Store == nil || o.Drivers == nil {
		panic("service.New: Store and Drivers are required")
	}
	clock := o.Clock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	channels := map[string]bool{}
	for _, c := range o.AlarmChannels {
		channels[c] = true
	}
	if len(o.AlarmChannels) == 0 && o.Alarms != nil {
		for _, c := range o.Alarms.Describe() {
			channels[c.Name] = true
		}
	}
	changed := o.OnGroupChange
	if changed == nil {
		changed = func() {}
	}
	window := o.JobScanWindow
	if window <= 0 {
		window = defaultJobScanWindow
	}
	runScan := o.RunScanWindow
	if runScan <= 0 {
		runScan = defaultRunScanWindow
	}
	log := o.Log
	log = logs.OrDiscard(log)
	a := o.Access
	svc := &Service{st: o.Store, trig: o.Scheduler, drivers: o.Drivers, clock: clock, channels: channels, alarms: o.Alarms, changed: changed, window: window,
		runScan: runScan, log: log,
		creds: newCredCache(), authPoll: orDur(a.AuthPoll, DefaultAuthPoll), sessionIdle: orDur(a.SessionIdle, DefaultSessionIdle),
		sessionMax: orDur(a.SessionMax, DefaultSessionMax), loginFree: a.LoginFreeTries, loginMaxDelay: orDur(a.LoginMaxDelay, DefaultLoginMaxDelay), hashCost: a.PasswordHash,
		registeredElsewhere: o.RegisteredElsewhere}
	if svc.loginFree <= 0 {
		svc.loginFree = DefaultLoginFreeTries
	}
	svc.addrFree, svc.userFree = orInt(a.AddressFreeTries, DefaultAddressFreeTries), orInt(a.UserFreeTries, DefaultUserFreeTries)
	slots := orInt(a.HashConcurrency, DefaultHashConcurrency)
	svc.cleanSlot = make(chan struct{}, 1)
	svc.hashSlots = make(chan struct{}, max(1, slots-1))
	svc.watcher = &AuthWatcher{svc: svc}
	return svc
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

// Ready reports whether the service can serve: the database answers and every
// embedded migration is applied. The error says which is not the case.
func (s *Service) Ready(ctx context.Context) error {
	if err := s.st.DB().PingContext(ctx); err != nil {
		return fmt.Errorf("database is not reachable: %w", err)
	}
	n, err := s.st.MigrationsPending(ctx)
	if err != nil {
		return fmt.Errorf("cannot read the applied migrations: %w", err)
	}
	if n > 0 {
		return fmt.Errorf("%d database migration(s) are not applied; run `ringjob migrate` or start the server with migrations enabled", n)
	}
	return nil
}
