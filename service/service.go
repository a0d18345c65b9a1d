package service

import (
	"context"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/jonboulle/clockwork"

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
	// Log receives warnings of background work; nil discards.
	Log *logrus.Entry
	// OnAuthChange, when set, is called after a committed change that moved
	// the auth version on (a job moved to another group, a group deleted
	// with its role bindings), so that this replica's permission caches
	// (identity.Service.AuthChanged) forget at once rather than at their next
	// poll.
	OnAuthChange func()
	// RegisteredElsewhere, when set, tells whether an executor of a group
	// other than appName registered an address; such an address is refused
	// as a static member of appName (Executors.RegisteredElsewhere).
	RegisteredElsewhere func(ctx context.Context, appName, address string) (bool, error)
}

// Service is the service layer over groups, jobs, runs, executors, alarms
// and the audit log. Accounts, credentials and logins are identity.Service's
// (auth/identity).
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

	authChanged func()
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
	authChanged := o.OnAuthChange
	if authChanged == nil {
		authChanged = func() {}
	}
	svc := &Service{st: o.Store, trig: o.Scheduler, drivers: o.Drivers, clock: clock, channels: channels, alarms: o.Alarms, changed: changed, window: window,
		runScan: runScan, log: log, authChanged: authChanged, registeredElsewhere: o.RegisteredElsewhere}
	return svc
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
