package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/gofiber/fiber/v2"
	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/alarm"
	"github.com/ringjob/ringjob/api"
	"github.com/ringjob/ringjob/api/xxlapi"
	"github.com/ringjob/ringjob/auth/identity"
	"github.com/ringjob/ringjob/auth/sso"
	"github.com/ringjob/ringjob/destinations"
	"github.com/ringjob/ringjob/internal/egress"
	"github.com/ringjob/ringjob/internal/lifecycle"
	"github.com/ringjob/ringjob/internal/tlsreload"
	"github.com/ringjob/ringjob/maintenance/reports"
	"github.com/ringjob/ringjob/maintenance/retention"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
	httptarget "github.com/ringjob/ringjob/targets/http"
	"github.com/ringjob/ringjob/targets/localexec"
	"github.com/ringjob/ringjob/web"
)

// logTimeFormat is RFC 3339 with milliseconds, in UTC.
const logTimeFormat = "2006-01-02T15:04:05.000Z07:00"

// utcHook stamps entries in UTC, so every replica's lines sort as text.
type utcHook struct{}

func (utcHook) Levels() []logrus.Level { return logrus.AllLevels }
func (utcHook) Fire(e *logrus.Entry) error {
	e.Time = e.Time.UTC()
	return nil
}

// logOutput: JSON logs go to stdout, where container platforms collect
// them, and stdout then carries nothing else; text logs go to stderr,
// beside the banner a person reads on stdout.
func logOutput(cfg *Config, stdout, stderr io.Writer) io.Writer {
	if cfg.Log.Format == "json" {
		return stdout
	}
	return stderr
}

func newLogger(cfg *Config, w io.Writer) *logrus.Entry {
	l := logrus.New()
	l.SetOutput(w)
	l.AddHook(utcHook{})
	lvl, _ := logrus.ParseLevel(cfg.Log.Level)
	l.SetLevel(lvl)
	if cfg.Log.Format == "json" {
		l.SetFormatter(&logrus.JSONFormatter{TimestampFormat: logTimeFormat})
	} else {
		l.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: logTimeFormat})
	}
	return logrus.NewEntry(l)
}

// schemaPoll is how often a replica started with database_migrations:
// external looks again at a database whose migrations are pending.
const schemaPoll = 2 * time.Second

// openStore opens the database for a replica: it refuses a schema a newer
// release migrated, then migrates (database_migrations: auto) or waits until
// `ringjob migrate` has (external), logging what it waits for.
func openStore(ctx context.Context, cfg *Config, log *logrus.Entry) (*store.Store, error) {
	st, err := openDatabase(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	if err := prepareSchema(ctx, cfg.DatabaseMigrations, st, log); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

func prepareSchema(ctx context.Context, mode string, st *store.Store, log *logrus.Entry) error {
	last := -1 // pending count last logged
	for waited := false; ; waited = true {
		status, err := st.Schema(ctx)
		if err != nil {
			return err
		}
		if err := status.CheckNotNewer(); err != nil {
			return err
		}
		if len(status.Pending) == 0 {
			if waited {
				log.Info("database schema is up to date; starting")
			}
			return nil
		}
		if mode == migrationsAuto {
			applied, err := st.Migrate(ctx)
			for _, m := range applied {
				log.WithField("migration", m).Info("applied migration")
			}
			return err
		}
		if len(status.Pending) != last {
			last = len(status.Pending)
			log.WithFields(logrus.Fields{"pending": len(status.Pending), "first_pending": status.Pending[0]}).
				Warn("waiting for the database schema: migrations are pending; run `ringjob migrate` (database_migrations is external)")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the database schema (%d migrations pending): %w", len(status.Pending), ctx.Err())
		case <-time.After(schemaPoll):
		}
	}
}

// appUserSpec is the application user `ringjob migrate --app-user` ensures.
type appUserSpec struct{ name, password string }

func migrate(ctx context.Context, cfg *Config, user *appUserSpec, stdout io.Writer) error {
	log := newLogger(cfg, stdout)
	st, err := openDatabase(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := prepareSchema(ctx, migrationsAuto, st, log); err != nil {
		return err
	}
	if user != nil {
		if err := st.EnsureAppUser(ctx, user.name, user.password); err != nil {
			return err
		}
		log.WithFields(logrus.Fields{"user": user.name, "privileges": store.AppUserPrivileges}).Info("application user ready")
	}
	fmt.Fprintf(stdout, "database %s is up to date (%s)\n", st.Kind(), redact(cfg.DatabaseURL))
	return nil
}

// serve runs one replica until ctx ends (SIGTERM or SIGINT), then stops
// gracefully: the API stops taking requests, the scheduler hands its ring
// back, local processes are ended, and the database is closed.
//
// Every part that runs is added to one list as it starts and stopped in
// reverse (parts): the order of the additions below is the stop order read
// backwards.
func serve(ctx context.Context, cfg *Config, stdout, stderr io.Writer) error {
	log := newLogger(cfg, logOutput(cfg, stdout, stderr))
	st, err := openStore(ctx, cfg, log)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, store.ErrSchemaNewer) {
			log.WithError(err).Info("stopped while starting: signal received")
			return nil
		}
		return err
	}
	var parts lifecycle.Services
	defer parts.Stop()
	parts.Add(lifecycle.Stage{OnStop: func() { st.Close() }})
	if err := sealSecrets(ctx, cfg, st, log); err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	clock := clockwork.NewRealClock()
	drivers := targets.NewRegistry()
	outbound, err := egress.New(cfg.Outbound, cfg.Listen)
	if err != nil {
		return err
	}
	alarms, channels, err := startAlarms(ctx, cfg, st, outbound, log)
	if err != nil {
		return err
	}
	parts.Add(lifecycle.Stage{OnStop: alarms.Stop})
	failures, err := failureSender(ctx, outbound)
	if err != nil {
		return err
	}
	sched, err := scheduler.New(scheduler.Options{Deliverer: failures, Config: cfg.Scheduler, Store: st, Drivers: drivers, Clock: clock,
		Log: log.WithField("component", "scheduler"), Metrics: scheduler.NewMetrics(reg),
		Alarmer: scheduler.DispatcherAlarmer{Dispatcher: alarms, ConsoleURL: strings.TrimRight(cfg.PublicURL, "/") + "/api/v1"}})
	if err != nil {
		return err
	}
	local, err := localexec.New(cfg.localexec(), sched.Sink(), log.WithField("component", "localexec"))
	if err != nil {
		return err
	}
	parts.Add(lifecycle.Stage{OnStop: func() {
		cctx, cancel := context.WithTimeout(context.Background(), cfg.Local.KillGrace+10*time.Second)
		defer cancel()
		if err := local.Close(cctx); err != nil {
			log.WithError(err).Warn("stop local processes")
		}
	}})
	drivers.Register("local", local)

	// HTTP executors: the executor API authenticates them; the driver calls them
	// with their group's token (or the global one).
	executors := service.NewExecutors(service.ExecutorsOptions{Store: st, Sink: sched.Sink(), Drivers: drivers, Clock: clock, Log: log.WithField("component", "executors"), Metrics: reg,
		CheckAddress: outbound.CheckURL, OnRegistryChange: sched.ForgetTargets, SentTarget: sched.SentTarget,
		AllowCrossGroupMembers: cfg.Executors.AllowCrossGroupMembers})
	execToken, execTokenNew, err := executors.EnsureToken(ctx, cfg.Executors.AccessToken)
	if err != nil {
		return fmt.Errorf("prepare the executor token: %w", err)
	}
	if err := executors.EnsureRunSecret(ctx); err != nil {
		return err
	}
	httpDriver := httptarget.New(httptarget.Config{
		AccessToken:         execToken,
		ConnectTimeout:      cfg.Executors.ConnectTimeout,
		RequestTimeout:      cfg.Executors.RequestTimeout,
		MaxConnsPerExecutor: cfg.Executors.MaxConnectionsPerExecutor,
		Policy:              outbound,
		AuthFor: func(ctx context.Context, target string, jobID int64) (httptarget.Auth, error) {
			app, tok, v35, err := executors.AuthFor(ctx, target, jobID)
			return httptarget.Auth{AppName: app, AccessToken: tok, Protocol35: v35}, err
		},
		LogDateFor: func(ctx context.Context, runID int64) (time.Time, error) {
			r, err := st.RunGet(ctx, runID)
			return time.UnixMilli(r.ScheduledMs), err
		},
	})
	drivers.Register("http", httpDriver)
	drivers.Register("https", httpDriver)

	lambdaDriver, stopLambda, err := startLambda(ctx, cfg, sched.Sink(), executors, log)
	if err != nil {
		return err
	}
	parts.Add(lifecycle.Stage{OnStop: func() {
		cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		stopLambda(cctx) // a no-op after the drain (stopping)
	}})
	drivers.Register("lambda", lambdaDriver)

	ident := identity.New(identity.Options{Store: st, Clock: clock, Log: log.WithField("component", "identity"),
		Access: identity.AccessOptions{SessionIdle: cfg.Auth.SessionIdle, SessionMax: cfg.Auth.SessionMax, HashConcurrency: cfg.API.HashConcurrency}})
	svc := service.New(service.Options{Store: st, Scheduler: sched, Drivers: drivers, Clock: clock, AlarmChannels: channels, Alarms: alarms,
		Log:                 log.WithField("component", "service"),
		RegisteredElsewhere: executors.RegisteredElsewhere,
		OnGroupChange: func() {
			executors.GroupsChanged()
			sched.ForgetTargets()
		},
		OnAuthChange: ident.AuthChanged})
	token, err := ident.EnsureAdminToken(ctx, cfg.API.AdminToken)
	if err != nil {
		return fmt.Errorf("prepare the admin token: %w", err)
	}
	if err := bootstrap(ctx, svc, cfg.Bootstrap, log); err != nil {
		return err
	}

	// The auth watcher drops cached credentials when another replica revokes one.
	authWatcher := ident.Watcher()
	if err := authWatcher.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	parts.Add(lifecycle.Stage{OnStop: authWatcher.Stop})

	// Ready once the scheduler runs: the API listens first (health and
	// metrics answer while the scheduler takes its locks), but a load
	// balancer or a deploy should not count the replica before it schedules.
	var scheduling atomic.Bool
	// While the replica stops, its API answers only executor callbacks (see
	// the end of serve).
	drain := &api.Drain{}
	app := api.New(api.Options{
		Service:  svc,
		Identity: ident,
		Ready: func(ctx context.Context) error {
			if drain.Draining() {
				return errors.New("this replica is stopping")
			}
			if !scheduling.Load() {
				return errors.New("the scheduler is starting")
			}
			return svc.Ready(ctx)
		},
		Drain:               drain,
		ServedWhileDraining: xxlapi.CallbackPaths(),
		Registry:            reg,
		TrustedProxies:      cfg.API.trustedProxies(),
		Log:                 log.WithField("component", "api"),
		BodyLimit:           cfg.API.BodyLimitBytes,
		Pprof:               cfg.API.Pprof,
		SecureCookies:       strings.HasPrefix(cfg.PublicURL, "https://"),
		Clock:               clock,
		SSO:                 ssoProvider(cfg, clock),
	})
	xxlapi.Mount(app, executors, log.WithField("component", "executor-api"))
	web.Mount(app)
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	if cfg.TLS.CertFile != "" {
		cert, err := tlsreload.New(cfg.TLS.CertFile, cfg.TLS.KeyFile, clock, log.WithField("component", "tls"))
		if err != nil {
			ln.Close()
			return err
		}
		ln = tls.NewListener(ln, cert.Config())
	}
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln) }()

	if err := sched.Start(ctx); err != nil {
		_ = app.Shutdown()
		if ctx.Err() != nil {
			log.Info("stopped while starting: signal received")
			return nil // asked to stop before the scheduler was up: a clean exit
		}
		return err
	}
	scheduling.Store(true)
	// From here the stop is the drain (see stopping).
	stop := &stopping{cfg: cfg, log: log, sched: sched, app: app, drain: drain, local: local, stopLambda: stopLambda}
	parts.Add(lifecycle.Stage{OnStop: stop.recording})
	parts.Add(lifecycle.Stage{OnStop: stop.api})
	parts.Add(lifecycle.Stage{OnStop: stop.inProcessTargets})
	parts.Add(lifecycle.Stage{OnStop: sched.StopFiring})
	parts.Add(lifecycle.Stage{OnStop: stop.refuseRequests})
	stopMaintenance, err := startMaintenance(ctx, cfg, st, sched.NodeID(), clock, reg, log)
	if err != nil {
		return err
	}
	parts.Add(lifecycle.Stage{OnStop: stopMaintenance})
	users, err := st.PrincipalList(ctx, store.PrincipalListParams{Kind: store.PrincipalUser, Limit: 1})
	if err != nil {
		log.WithError(err).Warn("look for users (for the first sign-in hint)")
	}
	firstStart := err == nil && len(users) == 0
	if cfg.Log.Format == "json" {
		// Nothing but JSON lines on stdout: the banner is a log line too.
		log.WithFields(logrus.Fields{"version": version, "node": sched.NodeID(), "database": st.Kind(),
			"api": cfg.PublicURL + "/api/v1", "console": cfg.PublicURL + "/", "public_url": cfg.PublicURL}).Info("ringjob is running")
		if execTokenNew {
			log.WithField("executor_token", execToken).Warn("executor access token generated; set it as the executors' accessToken")
		}
		if token != "" {
			log.WithField("admin_token", token).Warn("admin API token generated; shown once, only its hash is stored")
		}
		if firstStart {
			log.WithField("command", createAdminCommand(cfg, token)).Warn("no user yet: create the first admin user with this command, then sign in to the console")
		}
	} else {
		printBanner(stdout, cfg, sched.NodeID(), st.Kind(), execToken, execTokenNew, token, firstStart)
	}

	var serveErr error
	select {
	case <-ctx.Done():
		log.WithField("stop_grace", cfg.Scheduler.StopGrace.String()).Info("stopping: signal received")
	case serveErr = <-served:
		log.WithError(serveErr).Error("API server ended")
	}
	stop.begin()
	parts.Stop()
	log.Info("stopped")
	return serveErr
}

// stopping is the drain of a replica, in the order serve's parts list
// stops it: the API refuses new requests (503, not ready) and finishes
// those in flight, but keeps taking executor callbacks; maintenance stops;
// the scheduler stops firing (no new fires, the ring goes back to the other
// replicas); then, while the scheduler still records outcomes, local
// processes finish (or are ended and recorded lost) and synchronous Lambda
// invokes are answered (or abandoned and recorded failed), both within the
// stop grace; the API stops listening (callbacks after that find the port
// closed, and executors send them to another admin address, or again
// later); last the scheduler's outcome writer and ledger stop.
type stopping struct {
	cfg        *Config
	log        *logrus.Entry
	sched      *scheduler.Scheduler
	app        *fiber.App
	drain      *api.Drain
	local      *localexec.Driver
	stopLambda func(context.Context)

	// graceEnd is when the stop grace ends, counted from the signal: the
	// platform (ECS stopTimeout, Kubernetes terminationGracePeriodSeconds)
	// kills at a fixed time after it. ctx bounds the whole stop.
	graceEnd time.Time
	ctx      context.Context
	cancel   context.CancelFunc
}

// begin starts the stop's clock; a stop that was not begun (serve failed
// while starting) counts from its first step.
func (s *stopping) begin() {
	if s.ctx != nil {
		return
	}
	s.graceEnd = time.Now().Add(s.cfg.Scheduler.StopGrace)
	s.ctx, s.cancel = context.WithTimeout(context.Background(), s.cfg.Scheduler.StopGrace+15*time.Second)
}

func (s *stopping) refuseRequests() {
	s.begin()
	if err := s.drain.Start(s.ctx); err != nil {
		s.log.WithError(err).Warn("wait for API requests in flight")
	}
}

func (s *stopping) inProcessTargets() {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		drainLocal(s.local, s.graceEnd, s.cfg, s.sched.NodeID(), s.log)
	}()
	go func() {
		defer wg.Done()
		lctx, cancel := context.WithDeadline(context.Background(), s.graceEnd)
		defer cancel()
		s.stopLambda(lctx)
	}()
	wg.Wait()
}

func (s *stopping) api() {
	if err := s.app.ShutdownWithContext(s.ctx); err != nil {
		s.log.WithError(err).Warn("stop API server")
	}
}

func (s *stopping) recording() {
	s.sched.Stop(s.ctx)
	s.cancel()
}

// drainLocal lets running local processes finish until graceEnd, then ends
// the rest and records them lost, so that the job's retry policy runs them
// again on a replica that stays (a kill would not be retried).
func drainLocal(local *localexec.Driver, graceEnd time.Time, cfg *Config, node string, log *logrus.Entry) {
	dctx, cancel := context.WithDeadline(context.Background(), graceEnd)
	defer cancel()
	n := local.Drain(dctx)
	if n == 0 {
		return
	}
	log.WithFields(logrus.Fields{"runs": n, "stop_grace": cfg.Scheduler.StopGrace.String()}).Warn("stop grace over: ending local processes still running; they are retried per their job's policy")
	actx, cancel2 := context.WithTimeout(context.Background(), localexec.DefaultKillGrace+cfg.Local.KillGrace+10*time.Second)
	defer cancel2()
	msg := fmt.Sprintf("lost: replica %s stopped and the process was still running after its stop grace (%s); retried per the job's retry policy", node, cfg.Scheduler.StopGrace)
	if err := local.Abandon(actx, msg); err != nil {
		log.WithError(err).Warn("end local processes")
	}
}

// printBanner tells a person at a terminal where the server is and what it
// generated; firstStart (no user exists yet) adds how to make the first
// admin user.
func printBanner(stdout io.Writer, cfg *Config, node, dbKind, execToken string, execTokenNew bool, token string, firstStart bool) {
	fmt.Fprintf(stdout, "Ringjob %s is running (node %s, database %s)\n", version, node, dbKind)
	fmt.Fprintf(stdout, "  Console: %s/   (sign in with a user name and password; see below for the first admin)\n", cfg.PublicURL)
	fmt.Fprintf(stdout, "  API:     %s/api/v1   (OpenAPI: %s/api/v1/openapi.json)\n", cfg.PublicURL, cfg.PublicURL)
	fmt.Fprintf(stdout, "  Health:  %s/healthz  %s/readyz   Metrics: %s/metrics\n", cfg.PublicURL, cfg.PublicURL, cfg.PublicURL)
	if execTokenNew {
		fmt.Fprintf(stdout, "\n  Executor access token (generated; set it as the executors' accessToken):\n\n    %s\n", execToken)
	}
	fmt.Fprintf(stdout, "  Executors register at: %s (XXL-JOB admin address; /xxl-job-admin also works)\n", cfg.PublicURL)
	if token != "" {
		fmt.Fprintf(stdout, "\n  Admin API token (shown once, only its hash is stored):\n\n    %s\n\n", token)
		fmt.Fprintf(stdout, "  Try: curl -H 'Authorization: Bearer %s' %s/api/v1/jobs\n", token, cfg.PublicURL)
	}
	if !firstStart {
		return
	}
	// The console signs in users, not tokens: the admin token makes the
	// first admin user through the API, with no database access.
	fmt.Fprintf(stdout, "\n  First sign-in: create an admin user (its password is printed once), then sign in at %s/\n\n", cfg.PublicURL)
	fmt.Fprintf(stdout, "    %s\n\n", createAdminCommand(cfg, token))
}

// createAdminCommand is the command that makes the first admin user through
// the API with the admin token (shown as a placeholder when the token was
// configured rather than generated).
func createAdminCommand(cfg *Config, token string) string {
	if token == "" {
		token = "<your admin token>"
	}
	return fmt.Sprintf("RINGJOB_URL=%s RINGJOB_TOKEN=%s ringjob admin create-user admin --role admin", cfg.PublicURL, token)
}

func redact(dbURL string) string {
	i, j := strings.Index(dbURL, "://"), strings.LastIndex(dbURL, "@")
	if i > 0 && j > i {
		return dbURL[:i+3] + "***@" + dbURL[j+1:]
	}
	return dbURL
}

// startAlarms builds the alarm channels of the config and starts their
// dispatcher (it also runs with no channel: jobs cannot name any then).
func startAlarms(ctx context.Context, cfg *Config, st *store.Store, outbound *egress.Policy, log *logrus.Entry) (*alarm.Dispatcher, []string, error) {
	var senders []alarm.Sender
	if len(cfg.Alarms.Channels) > 0 {
		var err error
		if senders, err = alarm.BuildWith(cfg.Alarms, alarm.Deps{HTTPClient: &http.Client{Transport: outbound.Transport(nil, nil)}}); err != nil {
			return nil, nil, err
		}
	}
	opts := cfg.Alarms.Options()
	opts.Senders = senders
	opts.Log = log.WithField("component", "alarms")
	opts.Record = scheduler.RecordAlarmResult(st)
	d, err := alarm.NewDispatcher(opts)
	if err != nil {
		return nil, nil, err
	}
	if err := d.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, nil, err
	}
	return d, d.Channels(), nil
}

// startMaintenance starts the report roll-up and the retention worker (each
// runs on one replica at a time, by lease) and returns what stops them.
func startMaintenance(ctx context.Context, cfg *Config, st *store.Store, node string, clock clockwork.Clock, reg *prometheus.Registry, log *logrus.Entry) (func(), error) {
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if !cfg.Reports.Disabled {
		r, err := reports.New(reports.Options{Config: cfg.Reports, Store: st, Node: node, Clock: clock,
			Log: log.WithField("component", "reports"), Metrics: reports.NewMetrics(reg)})
		if err != nil {
			return stop, err
		}
		r.Start(ctx)
		stops = append(stops, r.Stop)
	}
	if !cfg.Retention.Disabled {
		w, err := retention.New(retention.Options{Config: cfg.Retention, Store: st, Node: node, Clock: clock,
			Log: log.WithField("component", "retention"), Metrics: retention.NewMetrics(reg), CountedOnly: !cfg.Reports.Disabled})
		if err != nil {
			stop()
			return func() {}, err
		}
		w.Start(ctx)
		stops = append(stops, w.Stop)
	}
	return stop, nil
}

// ssoProvider is the OIDC provider of the config, or nil when SSO is off.
func ssoProvider(cfg *Config, clock clockwork.Clock) *sso.Provider {
	if !cfg.Auth.SSO.Enabled() {
		return nil
	}
	return sso.New(cfg.Auth.SSO, clock)
}

// sealSecrets makes the store seal the secrets it keeps (group executor
// tokens, the generated executor token, the run-token secret, the device
// proof secret) with the configured key, and seals again what an earlier
// start stored in plaintext or under a previous key.
func sealSecrets(ctx context.Context, cfg *Config, st *store.Store, log *logrus.Entry) error {
	box, err := cfg.Secrets.box()
	if err != nil {
		return err
	}
	st.UseSecrets(box, service.ExecutorTokenSetting, service.RunTokenSetting, identity.DeviceProofSetting)
	if box == nil {
		log.Warn("secrets.key is not set: group executor tokens and the run-token secret are stored in plaintext in the database (set RINGJOB_SECRETS_KEY; see docs/security.md)")
		return nil
	}
	n, err := st.SecretsReseal(ctx)
	if err != nil {
		return fmt.Errorf("seal stored secrets with secrets.key: %w", err)
	}
	if n > 0 {
		log.WithFields(logrus.Fields{"values": n, "key_id": box.CurrentKeyID()}).Info("sealed stored secrets with the current secrets.key")
	}
	return nil
}

// failureSender delivers failure records: to AWS destinations with the
// default AWS configuration (on ECS, the task role; the IAM actions are in
// infra/terraform), to webhooks through the outbound policy.
func failureSender(ctx context.Context, outbound *egress.Policy) (*destinations.Sender, error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("failure destinations: load the AWS configuration: %w", err)
	}
	return destinations.NewSender(destinations.Config{AWS: awsCfg, HTTP: outbound.Client(10 * time.Second)}), nil
}
