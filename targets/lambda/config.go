package lambda

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/targets"
)

// Invocation modes.
const (
	// ModeSync invokes with RequestResponse: the result and the log tail
	// come back in the response.
	ModeSync = "sync"
	// ModeEvent invokes with Event: Lambda queues the invocation and the
	// function reports its outcome through the callback URL.
	ModeEvent = "event"
)

// Config configures the lambda:// driver. Zero values take the defaults
// below (see withDefaults).
type Config struct {
	// Sink receives outcomes and log lines. Required.
	Sink targets.Sink
	// Log is the driver's logger; nil discards.
	Log *logrus.Entry

	// Endpoint overrides the Lambda endpoint for every region (the server
	// maps RINGJOB_LAMBDA_ENDPOINT onto it): the Lambda emulator, LocalStack.
	// Empty uses AWS's regional endpoints.
	Endpoint string
	// Credentials overrides the default credential chain (environment,
	// shared config, SSO, web identity, ECS/EC2 roles). Tests pass static
	// dummies.
	Credentials aws.CredentialsProvider

	// AllowedFunctions limits the functions targets may name: account ids,
	// function ARN patterns and function name patterns (see allowList).
	// Empty allows lambda://REGION/NAME targets (the scheduler's own
	// account) and refuses every ARN. Checked when a target is saved
	// (ValidateTarget) and again at dispatch.
	AllowedFunctions []string

	// Mode is the invocation mode of targets that do not name one with
	// ?mode=: ModeSync (the default) or ModeEvent.
	Mode string
	// CallbackURL is where functions in Event mode report outcomes: the
	// server's XXL-JOB callback endpoint, e.g. https://ringjob.example.com/api/callback.
	// Required for Event mode.
	CallbackURL string
	// RunToken returns the callback token of a run (the server signs one per
	// run); it goes into the Event payload as callback_token. Required for
	// Event mode.
	RunToken func(runID int64) string

	// MaxAttempts is how many times one invoke is tried when Lambda throttles
	// (429) or fails (5xx), or the connection cannot be made. Default 4.
	MaxAttempts int
	// BackoffBase is the pause before the second attempt; it doubles for
	// each further attempt, with jitter, up to BackoffMax. A Retry-After
	// from Lambda is honoured up to BackoffMax. Defaults 200ms and 5s.
	BackoffBase time.Duration
	BackoffMax  time.Duration

	// BeatTTL is how long a GetFunction answer (found or not found) is
	// reused by Beat, IdleBeat and Run. Default 30s.
	BeatTTL time.Duration
	// MaxWait bounds how long a synchronous invoke is waited for when the
	// job has no timeout (or a longer one). Default 16m: Lambda's longest
	// timeout is 15 minutes.
	MaxWait time.Duration
	// EventGrace: an Event run with a timeout that has not reported when
	// Request.Timeout + EventGrace has passed is recorded as timed_out.
	// Default 1m.
	EventGrace time.Duration
	// EventMaxAge: an Event run without a timeout that has not reported
	// after this long is recorded as timed_out. Default 6h, the longest
	// Lambda keeps an event.
	EventMaxAge time.Duration
	// MaxInFlight caps the synchronous invokes and watched Event runs of
	// this driver; past it Run fails with an error wrapping targets.ErrBusy.
	// Default 10000.
	MaxInFlight int

	// Clock tells time (watchdog, GetFunction cache, backoff); nil is the
	// real clock.
	Clock clockwork.Clock
	// HTTPClient overrides the HTTP client of the AWS SDK.
	HTTPClient *http.Client
}

// Defaults of Config.
const (
	DefaultMaxAttempts = 4
	DefaultBackoffBase = 200 * time.Millisecond
	DefaultBackoffMax  = 5 * time.Second
	DefaultBeatTTL     = 30 * time.Second
	DefaultMaxWait     = 16 * time.Minute
	DefaultEventGrace  = time.Minute
	DefaultEventMaxAge = 6 * time.Hour
	DefaultMaxInFlight = 10000
)

// withDefaults fills zero fields; it is the one place defaults are set.
func (c Config) withDefaults() Config {
	if c.Mode == "" {
		c.Mode = ModeSync
	}
	set := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	set(&c.BackoffBase, DefaultBackoffBase)
	set(&c.BackoffMax, DefaultBackoffMax)
	set(&c.BeatTTL, DefaultBeatTTL)
	set(&c.MaxWait, DefaultMaxWait)
	set(&c.EventGrace, DefaultEventGrace)
	set(&c.EventMaxAge, DefaultEventMaxAge)
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	return c
}

// Validate checks the config; every message names the field at fault. Zero
// values are valid where a default exists.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("lambda target config: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	if c.Sink == nil {
		bad("Sink", "is required")
	}
	switch c.Mode {
	case "", ModeSync, ModeEvent:
	default:
		bad("Mode", "%q is not %q or %q", c.Mode, ModeSync, ModeEvent)
	}
	if c.Mode == ModeEvent && (c.CallbackURL == "" || c.RunToken == nil) {
		bad("CallbackURL", "Event mode needs CallbackURL and RunToken: functions report outcomes through the callback")
	}
	for _, f := range []struct{ field, raw string }{{"Endpoint", c.Endpoint}, {"CallbackURL", c.CallbackURL}} {
		if f.raw == "" {
			continue
		}
		u, err := url.Parse(f.raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad(f.field, "%q is not an absolute http(s) URL", f.raw)
		}
	}
	for _, f := range []struct {
		field string
		v     time.Duration
	}{
		{"BackoffBase", c.BackoffBase}, {"BackoffMax", c.BackoffMax}, {"BeatTTL", c.BeatTTL}, {"MaxWait", c.MaxWait},
		{"EventGrace", c.EventGrace}, {"EventMaxAge", c.EventMaxAge},
	} {
		if f.v < 0 {
			bad(f.field, "must not be negative (got %s; 0 means the default)", f.v)
		}
	}
	if _, err := parseAllowList(c.AllowedFunctions); err != nil {
		errs = append(errs, err)
	}
	if c.MaxAttempts < 0 {
		bad("MaxAttempts", "must not be negative (got %d; 0 means %d)", c.MaxAttempts, DefaultMaxAttempts)
	}
	if c.MaxInFlight < 0 {
		bad("MaxInFlight", "must not be negative (got %d; 0 means %d)", c.MaxInFlight, DefaultMaxInFlight)
	}
	return errors.Join(errs...)
}
