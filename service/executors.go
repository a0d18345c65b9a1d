package service

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/jonboulle/clockwork"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
	"github.com/sirupsen/logrus"
)

// ExecutorTokenSetting names the setting that holds the generated global
// executor token.
const ExecutorTokenSetting = "executor_access_token"

// ErrExecutorToken is a wrong or missing XXL-JOB-ACCESS-TOKEN. Its text is
// XXL-JOB's, so executors log what they always logged.
//
//lint:ignore ST1005 XXL-JOB's exact text, which executors log and match
var ErrExecutorToken = errors.New("The access token is wrong.")

// ErrIllegalArgument is a registry request with a blank field (XXL-JOB's text).
//
//lint:ignore ST1005 XXL-JOB's exact text
var ErrIllegalArgument = errors.New("Illegal Argument.")

// ExecutorsOptions build the executor-facing service.
type ExecutorsOptions struct {
	Store *store.Store
	// Sink records run outcomes reported by callbacks (the scheduler's sink).
	Sink  targets.Sink
	Clock clockwork.Clock
	Log   *logrus.Entry
	// OnRegistryChange, when set, hears that an executor registered for the
	// first time or left, so caches of dispatch candidates can be dropped.
	OnRegistryChange func()
}

// Executors serves what HTTP executors ask of the server: registry beats,
// goodbyes and run callbacks, with the executor token checks.
type Executors struct {
	st        *store.Store
	sink      targets.Sink
	clock     clockwork.Clock
	log       *logrus.Entry
	token     string
	runSecret []byte // signs per-run callback tokens (functions in Event mode)
	dir       *executorDirectory
	onChange  func()
}

// RunTokenSetting names the setting that holds the secret per-run callback
// tokens are signed with (shared by all replicas).
const RunTokenSetting = "run_token_secret"

// NewExecutors builds the service. Call EnsureToken before serving.
func NewExecutors(o ExecutorsOptions) *Executors {
	clock := o.Clock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	log := o.Log
	if log == nil {
		l := logrus.New()
		l.SetOutput(discardWriter{})
		log = logrus.NewEntry(l)
	}
	onChange := o.OnRegistryChange
	if onChange == nil {
		onChange = func() {}
	}
	return &Executors{st: o.Store, sink: o.Sink, clock: clock, log: log, dir: newExecutorDirectory(o.Store, clock), onChange: onChange}
}

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// EnsureToken sets the global executor token: the configured one, or the one
// generated at a first start and kept in the database (all replicas share
// it). generated is true when this call created it, so the caller shows it.
func (e *Executors) EnsureToken(ctx context.Context, configured string) (token string, generated bool, err error) {
	if configured != "" {
		e.token = configured
		return configured, false, nil
	}
	if v, ok, err := e.st.SettingGet(ctx, ExecutorTokenSetting); err != nil {
		return "", false, err
	} else if ok {
		e.token = v
		return v, false, nil
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", false, fmt.Errorf("generate executor token: %w", err)
	}
	fresh := "rjx_" + base64.RawURLEncoding.EncodeToString(b)
	v, err := e.st.SettingInit(ctx, ExecutorTokenSetting, fresh, e.clock.Now().UnixMilli())
	if err != nil {
		return "", false, err
	}
	e.token = v
	return v, v == fresh, nil
}

// EnsureRunSecret loads (or creates at a first start) the secret that signs
// per-run callback tokens.
func (e *Executors) EnsureRunSecret(ctx context.Context) error {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return fmt.Errorf("generate run token secret: %w", err)
	}
	v, err := e.st.SettingInit(ctx, RunTokenSetting, base64.RawURLEncoding.EncodeToString(b), e.clock.Now().UnixMilli())
	if err != nil {
		return err
	}
	secret, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(secret) < 16 {
		return fmt.Errorf("setting %s is not a valid secret", RunTokenSetting)
	}
	e.runSecret = secret
	return nil
}

// RunToken is the callback token of one run: whoever holds it may report
// that run's outcome, and only that run's (Lambda functions in Event mode
// get it in their payload).
func (e *Executors) RunToken(runID int64) string {
	mac := hmac.New(sha256.New, e.runSecret)
	fmt.Fprintf(mac, "ringjob-run:%d", runID)
	return "rjr_" + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// AuthenticateRun checks that token is the callback token of every run in items.
func (e *Executors) AuthenticateRun(token string, items []CallbackItem) error {
	if len(e.runSecret) == 0 || len(items) == 0 {
		return ErrExecutorToken
	}
	for _, it := range items {
		if subtle.ConstantTimeCompare([]byte(e.RunToken(it.LogID)), []byte(token)) != 1 {
			return ErrExecutorToken
		}
	}
	return nil
}

// Token is the global executor token (what the server sends to executors).
func (e *Executors) Token() string { return e.token }

// Authenticate checks an executor's XXL-JOB-ACCESS-TOKEN. With an
// XXL-JOB-APPNAME whose group has its own token (XXL-JOB 3.5), that token is
// required; otherwise the global one.
func (e *Executors) Authenticate(ctx context.Context, appName, token string) error {
	want := e.token
	if appName != "" {
		g, ok, err := e.dir.settings(ctx, appName)
		if err != nil {
			return err
		}
		if ok && g.AccessToken != "" {
			want = g.AccessToken
		}
	}
	if want == "" || subtle.ConstantTimeCompare([]byte(want), []byte(token)) != 1 {
		return ErrExecutorToken
	}
	return nil
}

// Auth returns how the server talks to an executor address: the token of
// the group it registered under (or the global one), its app name, and
// whether that group speaks XXL-JOB 3.5. It reads the executor directory in
// memory, not the database (see DirectoryTTL for how fresh it is).
func (e *Executors) Auth(ctx context.Context, target string) (appName, token string, protocol35 bool, err error) {
	app, g, ok, err := e.dir.appOf(ctx, target)
	if err != nil {
		return "", "", false, err
	}
	if app == "" {
		return "", e.token, false, nil
	}
	token = e.token
	if ok {
		if g.AccessToken != "" {
			token = g.AccessToken
		}
		protocol35 = g.Protocol == "3.5"
	}
	return app, token, protocol35, nil
}

// GroupsChanged drops what the executor directory knows about groups; the
// service layer calls it after it created, changed or deleted a group.
func (e *Executors) GroupsChanged() { e.dir.invalidate() }

// RegistryParams is an executor's registry beat (XXL-JOB RegistryParam).
type RegistryParams struct {
	RegistryGroup string `json:"registryGroup"`
	RegistryKey   string `json:"registryKey"`
	RegistryValue string `json:"registryValue"`
}

func (p RegistryParams) validate() error {
	if strings.TrimSpace(p.RegistryGroup) == "" || strings.TrimSpace(p.RegistryKey) == "" || strings.TrimSpace(p.RegistryValue) == "" {
		return ErrIllegalArgument
	}
	if len(p.RegistryKey) > 64 || len(p.RegistryValue) > 255 {
		return fmt.Errorf("%w registryKey must be at most 64 and registryValue at most 255 characters", ErrIllegalArgument)
	}
	u, err := url.Parse(p.RegistryValue)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w registryValue must be the executor's http(s) base URL, got %q", ErrIllegalArgument, p.RegistryValue)
	}
	return nil
}

// normalizeAddress drops the trailing slash Java executors send.
func normalizeAddress(a string) string { return strings.TrimRight(strings.TrimSpace(a), "/") }

// Register records a registry beat.
func (e *Executors) Register(ctx context.Context, p RegistryParams) error {
	if err := p.validate(); err != nil {
		return err
	}
	addr := normalizeAddress(p.RegistryValue)
	known := e.dir.knows(ctx, p.RegistryKey, addr) // before the write, which a reload would see
	if err := e.st.RegistryUpsert(ctx, store.RegistryUpsertParams{AppName: p.RegistryKey, Address: addr, NowMs: e.clock.Now().UnixMilli()}); err != nil {
		return err
	}
	if !known { // a new executor, not a heartbeat
		e.dir.invalidate()
		e.onChange()
	}
	return nil
}

// Unregister removes an executor that is shutting down.
func (e *Executors) Unregister(ctx context.Context, p RegistryParams) error {
	if err := p.validate(); err != nil {
		return err
	}
	if err := e.st.RegistryRemove(ctx, p.RegistryKey, normalizeAddress(p.RegistryValue)); err != nil {
		return err
	}
	e.dir.invalidate()
	e.onChange()
	return nil
}

// List lists the live executors of an app name ("" = all).
func (e *Executors) List(ctx context.Context, appName string, deadAfterMs int64) ([]store.Executor, error) {
	return e.st.RegistryList(ctx, store.RegistryListParams{AppName: appName, SinceMs: e.clock.Now().UnixMilli() - deadAfterMs})
}

// CallbackItem is one run result from an executor (XXL-JOB
// HandleCallbackParam). Both spellings of the log time are accepted; unknown
// fields (the Go client's executeResult) are ignored by the decoder.
type CallbackItem struct {
	LogID       int64  `json:"logId"`
	LogDateTim  int64  `json:"logDateTim"`
	LogDateTime int64  `json:"logDateTime"`
	HandleCode  int    `json:"handleCode"`
	HandleMsg   string `json:"handleMsg"`
}

// outcome maps XXL-JOB handle codes onto run states.
func (c CallbackItem) outcome() targets.Outcome {
	switch {
	case c.HandleCode == 200:
		return targets.Outcome{State: targets.OutcomeSucceeded, Code: 200, Message: c.HandleMsg}
	case c.HandleCode == 502:
		return targets.Outcome{State: targets.OutcomeTimedOut, Code: 502, Message: c.HandleMsg}
	case strings.Contains(c.HandleMsg, "killed"):
		return targets.Outcome{State: targets.OutcomeKilled, Code: c.HandleCode, Message: c.HandleMsg}
	default:
		return targets.Outcome{State: targets.OutcomeFailed, Code: c.HandleCode, Message: c.HandleMsg}
	}
}

// maxHandleMsg caps a callback message (XXL-JOB keeps 15 000 characters).
const maxHandleMsg = 15000

// Callback records run results. The first result of a run wins; later ones
// are ignored and logged, as are results for unknown runs.
func (e *Executors) Callback(ctx context.Context, items []CallbackItem) error {
	for _, it := range items {
		if len(it.HandleMsg) > maxHandleMsg {
			it.HandleMsg = it.HandleMsg[:maxHandleMsg] + "..."
		}
		log := e.log.WithFields(logrus.Fields{"run_id": it.LogID, "handle_code": it.HandleCode})
		r, err := e.st.RunGet(ctx, it.LogID)
		if errors.Is(err, store.ErrNotFound) {
			log.Warn("callback for an unknown run (log item not found.)")
			continue
		}
		if err != nil {
			return err
		}
		switch r.State {
		case store.RunDispatching, store.RunRunning:
		default:
			log.WithField("state", r.State).Info("ignored a repeated callback: the run already has an outcome")
			continue
		}
		if err := e.sink.Complete(ctx, it.LogID, it.outcome()); err != nil {
			return fmt.Errorf("record callback of run %d: %w", it.LogID, err)
		}
	}
	return nil
}
