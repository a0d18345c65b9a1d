package executor

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
)

// Defaults of the options.
const (
	DefaultAdminTimeout          = 3 * time.Second
	DefaultRegistryInterval      = 30 * time.Second // XXL-JOB BEAT_TIMEOUT
	DefaultCallbackRetryInterval = 30 * time.Second
	DefaultLogRetentionDays      = 30
	DefaultShutdownGrace         = 5 * time.Second // XXL-JOB ELEGANT_SHUTDOWN_WAITING_SECONDS
	DefaultMaxQueue              = 1000

	workerIdleTimeout = 90 * time.Second // 30 empty polls of 3 s in XXL-JOB
	retentionInterval = 24 * time.Hour
)

// Logger receives the executor's own messages (failed registry or callback
// calls, rejected triggers). *logrus.Entry and *logrus.Logger satisfy it. The
// default discards everything. Run output goes to the per-run log files, not
// here.
type Logger interface {
	Infof(format string, args ...any)
	Errorf(format string, args ...any)
}

type discardLogger struct{}

func (discardLogger) Infof(string, ...any)  {}
func (discardLogger) Errorf(string, ...any) {}

// Option configures an Executor; pass them to New.
type Option func(*config)

type config struct {
	admins              []string
	token               string
	tokenSet            bool
	noToken             bool
	appName             string
	address             string
	logDir              string
	retentionDays       int
	clock               clockwork.Clock
	client              *http.Client
	logger              Logger
	adminTimeout        time.Duration
	registryInterval    time.Duration
	retryInterval       time.Duration
	shutdownGrace       time.Duration
	maxQueue            int
	retentionDaysSet    bool
	shutdownGraceSet    bool
	retryIntervalSet    bool
	registryIntervalSet bool
	adminTimeoutSet     bool
}

// WithAdminAddresses sets the admin base URLs, including any context path
// (e.g. "http://ringjob:8080" or "http://xxl:8080/xxl-job-admin"). Each value
// may also be a comma-separated list, as in XXL-JOB's
// xxl.job.admin.addresses. Registry and callback calls try them in order until
// one accepts. Required.
func WithAdminAddresses(addrs ...string) Option {
	return func(c *config) {
		for _, a := range addrs {
			for _, p := range strings.Split(a, ",") {
				if p = strings.TrimSpace(p); p != "" {
					c.admins = append(c.admins, strings.TrimRight(p, "/"))
				}
			}
		}
	}
}

// WithAccessToken sets the token checked on every incoming request and sent
// on every outgoing one (header XXL-JOB-ACCESS-TOKEN). Required unless
// WithoutAccessToken is given.
func WithAccessToken(token string) Option {
	return func(c *config) { c.token, c.tokenSet = token, true }
}

// WithoutAccessToken runs the executor with no token: anyone who can reach
// its port can trigger and kill jobs. Only for trusted networks and admins
// that have no token configured.
func WithoutAccessToken() Option {
	return func(c *config) { c.noToken = true }
}

// WithAppName sets the executor group's app name: the registryKey, also sent
// as the XXL-JOB-APPNAME header. Required.
func WithAppName(name string) Option {
	return func(c *config) { c.appName = name }
}

// WithAddress sets the registryValue: the base URL the admin calls, such as
// "http://10.0.0.5:9999/" (XXL-JOB's xxl.job.executor.address). If the
// handler is mounted under a prefix, include it. Without it, ListenAndServe
// and Serve use http://{ip}:{port}/ of their listener; Start alone fails.
func WithAddress(address string) Option {
	return func(c *config) { c.address = address }
}

// WithLogDir sets the directory of the per-run log files and of the callback
// retry files. Default: {os.TempDir()}/ringjob-executor/{appname}.
func WithLogDir(dir string) Option {
	return func(c *config) { c.logDir = dir }
}

// WithLogRetentionDays sets how many days of run-log date directories are
// kept; the cleaner runs once a day. Below 3 disables cleaning (as XXL-JOB).
// Default 30.
func WithLogRetentionDays(days int) Option {
	return func(c *config) { c.retentionDays, c.retentionDaysSet = days, true }
}

// WithClock sets the clock for all timers and log timestamps (tests pass a
// clockwork.FakeClock). Default: the real clock.
func WithClock(clock clockwork.Clock) Option {
	return func(c *config) { c.clock = clock }
}

// WithHTTPClient sets the client for calls to the admins. Each call is also
// bounded by WithAdminTimeout. Default: a client of its own, whose idle
// connections Stop closes.
func WithHTTPClient(client *http.Client) Option {
	return func(c *config) { c.client = client }
}

// WithLogger sets where the executor's own messages go. Default: discarded.
func WithLogger(l Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithAdminTimeout bounds each call to an admin. Default 3 s.
func WithAdminTimeout(d time.Duration) Option {
	return func(c *config) { c.adminTimeout, c.adminTimeoutSet = d, true }
}

// WithRegistryInterval sets how often the executor registers (heartbeat).
// Default 30 s; admins drop executors silent for 90 s.
func WithRegistryInterval(d time.Duration) Option {
	return func(c *config) { c.registryInterval, c.registryIntervalSet = d, true }
}

// WithCallbackRetryInterval sets how often callbacks that no admin accepted
// are read back from their retry files and sent again. Default 30 s.
func WithCallbackRetryInterval(d time.Duration) Option {
	return func(c *config) { c.retryInterval, c.retryIntervalSet = d, true }
}

// WithShutdownGrace sets how long Stop lets running and queued runs finish
// before it cancels their contexts. Default 5 s; 0 cancels at once.
func WithShutdownGrace(d time.Duration) Option {
	return func(c *config) { c.shutdownGrace, c.shutdownGraceSet = d, true }
}

// WithMaxQueue bounds the triggers waiting per job id (SERIAL_EXECUTION); a
// trigger beyond it is rejected with code 500. Default 1000.
func WithMaxQueue(n int) Option {
	return func(c *config) { c.maxQueue = n }
}

// build fills the defaults and validates; messages name the option.
func (c *config) build() error {
	if len(c.admins) == 0 {
		return fmt.Errorf("executor: no admin address; set WithAdminAddresses, e.g. http://127.0.0.1:8080")
	}
	for _, a := range c.admins {
		u, err := url.Parse(a)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("executor: WithAdminAddresses: %q is not an http(s) URL", a)
		}
	}
	if c.appName = strings.TrimSpace(c.appName); c.appName == "" {
		return fmt.Errorf("executor: no app name; set WithAppName to the executor group's AppName")
	}
	if len(c.appName) > 64 || strings.ContainsAny(c.appName, "/\\ \t\r\n") {
		return fmt.Errorf("executor: WithAppName: %q must be at most 64 characters with no spaces or slashes", c.appName)
	}
	switch {
	case c.noToken && c.tokenSet && c.token != "":
		return fmt.Errorf("executor: both WithAccessToken and WithoutAccessToken given; keep one")
	case !c.noToken && c.token == "":
		return fmt.Errorf("executor: no access token; set WithAccessToken to the token the admin uses, or WithoutAccessToken on a trusted network")
	}
	if c.address != "" {
		u, err := url.Parse(c.address)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("executor: WithAddress: %q is not an http(s) URL such as http://10.0.0.5:9999/", c.address)
		}
	}
	if c.logDir == "" {
		c.logDir = filepath.Join(os.TempDir(), "ringjob-executor", c.appName)
	}
	if !c.retentionDaysSet {
		c.retentionDays = DefaultLogRetentionDays
	}
	if c.clock == nil {
		c.clock = clockwork.NewRealClock()
	}
	if c.logger == nil {
		c.logger = discardLogger{}
	}
	durations := []struct {
		name string
		set  bool
		v    *time.Duration
		def  time.Duration
		zero bool
	}{
		{"WithAdminTimeout", c.adminTimeoutSet, &c.adminTimeout, DefaultAdminTimeout, false},
		{"WithRegistryInterval", c.registryIntervalSet, &c.registryInterval, DefaultRegistryInterval, false},
		{"WithCallbackRetryInterval", c.retryIntervalSet, &c.retryInterval, DefaultCallbackRetryInterval, false},
		{"WithShutdownGrace", c.shutdownGraceSet, &c.shutdownGrace, DefaultShutdownGrace, true},
	}
	for _, d := range durations {
		switch {
		case !d.set:
			*d.v = d.def
		case *d.v < 0 || (*d.v == 0 && !d.zero):
			return fmt.Errorf("executor: %s: %v must be positive", d.name, *d.v)
		}
	}
	switch {
	case c.maxQueue == 0:
		c.maxQueue = DefaultMaxQueue
	case c.maxQueue < 0:
		return fmt.Errorf("executor: WithMaxQueue: %d must be positive", c.maxQueue)
	}
	return nil
}
