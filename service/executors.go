package service

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/logs"

	"github.com/ringjob/ringjob/internal/xxlwire"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
)

// ExecutorTokenSetting names the setting that holds the generated global
// executor token.
const ExecutorTokenSetting = "executor_access_token"

// ErrExecutorToken is a wrong or missing XXL-JOB-ACCESS-TOKEN. Its text is
// XXL-JOB's, so executors log what they always logged.
//
//lint:ignore ST1005 XXL-JOB's exact text, which executors log and match
var ErrExecutorToken = errors.New(xxlwire.MsgTokenWrong)

// ErrIllegalArgument is a registry request with a blank field (XXL-JOB's text).
//
//lint:ignore ST1005 XXL-JOB's exact text
var ErrIllegalArgument = errors.New(xxlwire.MsgIllegalArgument)

// ExecutorsOptions build the executor-facing service.
type ExecutorsOptions struct {
	Store *store.Store
	// Sink records run outcomes reported by callbacks (the scheduler's sink).
	Sink  targets.Sink
	Clock clockwork.Clock
	Log   *logrus.Entry
	// Metrics counts refused registrations and callbacks (nil: not counted).
	Metrics prometheus.Registerer
	// CheckAddress, when set, vets the address of a registration (the
	// outbound policy); an error refuses it.
	CheckAddress func(ctx context.Context, address string) error
	// OnRegistryChange, when set, hears that an executor registered for the
	// first time or left, so caches of dispatch candidates can be dropped.
	OnRegistryChange func()
	// SentTarget, when set, says where this replica sent a run whose target
	// may not be recorded yet ("" when it does not know; the scheduler's
	// SentTarget): a callback for it is authorized at once instead of
	// waiting for the record.
	SentTarget func(runID int64) string
	// Drivers tells what a run's target can do: only a run on a target of
	// the executor protocol reports by callback with an executor token (nil:
	// none does, and such callbacks are refused).
	Drivers *targets.Registry
	// AllowCrossGroupMembers lets a group list, as a static member, an
	// address that an executor of another group registered; runs sent there
	// still carry only their own group's credential.
	AllowCrossGroupMembers bool
}

// Executors serves what HTTP executors ask of the server: registry beats,
// goodbyes and run callbacks, with the executor token checks.
type Executors struct {
	st        *store.Store
	sink      targets.Sink
	drivers   *targets.Registry
	clock     clockwork.Clock
	log       *logrus.Entry
	token     string
	runSecret []byte // signs per-run callback tokens (functions in Event mode)
	metrics   *executorMetrics
	// checkAddress vets registered addresses (the outbound policy).
	checkAddress func(ctx context.Context, address string) error
	// dir answers Auth from memory (what every dispatch asks).
	dir        *executorDirectory
	onChange   func()
	sentTarget func(runID int64) string
	// allowCrossGroup: see ExecutorsOptions.AllowCrossGroupMembers.
	allowCrossGroup bool
	// auditedRefusals: when each refusal was last audited (auditRegistry).
	auditMu         sync.Mutex
	auditedRefusals map[string]time.Time
}

// executorMetrics count what the executor API refused.
type executorMetrics struct {
	refusedTotal *prometheus.CounterVec
}

func newExecutorMetrics(reg prometheus.Registerer) *executorMetrics {
	m := &executorMetrics{refusedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ringjob_executor_requests_refused_total",
		Help: "Executor API requests refused, by endpoint (registry, callback) and reason.",
	}, []string{"endpoint", "reason"})}
	if reg != nil {
		reg.MustRegister(m.refusedTotal)
	}
	return m
}

func (m *executorMetrics) refused(endpoint, reason string) {
	m.refusedTotal.WithLabelValues(endpoint, reason).Inc()
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
	log = logs.OrDiscard(log)
	onChange := o.OnRegistryChange
	if onChange == nil {
		onChange = func() {}
	}
	return &Executors{st: o.Store, sink: o.Sink, drivers: o.Drivers, clock: clock, log: log, metrics: newExecutorMetrics(o.Metrics), checkAddress: o.CheckAddress,
		dir: newExecutorDirectory(o.Store, clock), onChange: onChange, sentTarget: o.SentTarget, allowCrossGroup: o.AllowCrossGroupMembers}
}

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

// Token is the global executor token (what the server sends to executors).
func (e *Executors) Token() string { return e.token }

// ErrForeignExecutor refuses to send a run to an address that an executor of
// another group registered (see ExecutorsOptions.AllowCrossGroupMembers).
var ErrForeignExecutor = errors.New("the address is registered by another group's executor; a group's static members may not point at it (server setting executors.allow_cross_group_members)")

// Auth returns how the server talks to an executor address on behalf of the
// group targets.WithGroup put into ctx (the group of the run): that group's
// own executor token, or the global one when it has none; its app name; and
// whether it speaks XXL-JOB 3.5. The group the address registered in never
// chooses the token: the owner of one group could otherwise list another
// group's executor as a member and have the server hand it that group's
// token. Such a send is refused with ErrForeignExecutor unless the operator
// allowed it. Without a group in ctx nothing is sent. It reads the executor
// directory in memory, not the database (see DirectoryTTL for how fresh it
// is).
func (e *Executors) Auth(ctx context.Context, target string) (appName, token string, protocol35 bool, err error) {
	gid, ok := targets.GroupFrom(ctx)
	if !ok {
		return "", "", false, fmt.Errorf("no group for a request to %s: the credential is the group's, so the caller must name it (targets.WithGroup)", target)
	}
	g, app, ok, err := e.dir.groupByID(ctx, gid)
	if err != nil {
		return "", "", false, err
	}
	if !ok {
		return "", "", false, fmt.Errorf("group %d does not exist", gid)
	}
	registered, _, _, err := e.dir.appOf(ctx, target)
	if err != nil {
		return "", "", false, err
	}
	if registered != "" && registered != app && !e.allowCrossGroup {
		return "", "", false, ErrForeignExecutor
	}
	token = e.token
	if g.AccessToken != "" {
		token = g.AccessToken
	}
	return app, token, g.Protocol == xxlwire.Protocol35, nil
}

// AuthFor is Auth for a request about a job: the job's group when ctx names
// none (a kill or a busy probe sent outside a dispatch), read from the
// database.
func (e *Executors) AuthFor(ctx context.Context, target string, jobID int64) (appName, token string, protocol35 bool, err error) {
	if _, ok := targets.GroupFrom(ctx); !ok && jobID > 0 {
		gid, err := e.groupOfJob(ctx, jobID)
		if err != nil {
			return "", "", false, err
		}
		ctx = targets.WithGroup(ctx, gid)
	}
	return e.Auth(ctx, target)
}

// groupOfJob reads the group of job id. Apart from AuthFor because every
// send calls AuthFor, deep in its goroutine's stack, and a Job read there
// would make its frame (and every sending goroutine's stack) larger.
func (e *Executors) groupOfJob(ctx context.Context, id int64) (int64, error) {
	j, err := e.st.JobGet(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("find the group of job %d: %w", id, err)
	}
	return j.GroupID, nil
}

// RegisteredElsewhere reports whether an executor of a group other than
// appName registered address (false when the operator allows such members).
func (e *Executors) RegisteredElsewhere(ctx context.Context, appName, address string) (bool, error) {
	if e.allowCrossGroup {
		return false, nil
	}
	registered, _, _, err := e.dir.appOf(ctx, address)
	return registered != "" && registered != appName, err
}

// GroupsChanged drops what the executor directory knows about groups; the
// service layer calls it after it created, changed or deleted a group.
func (e *Executors) GroupsChanged() { e.dir.invalidate() }

// validateRegistry checks an executor's registry beat or goodbye.
func validateRegistry(p xxlwire.RegistryRequest) error {
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

// Register records a registry beat made with token. The beat is accepted
// only into a group that exists under registryKey, accepts registrations,
// and whose credential token is: its own executor token when it has one,
// the global executor token otherwise. A refusal is a *RegistryRefusedError
// (or ErrExecutorToken for a wrong token) and is logged with the app name,
// the address and the reason.
func (e *Executors) Register(ctx context.Context, token string, p xxlwire.RegistryRequest) error {
	if err := validateRegistry(p); err != nil {
		return err
	}
	addr := normalizeAddress(p.RegistryValue)
	if err := e.authorizeRegistry(ctx, token, p.RegistryKey, addr, true); err != nil {
		return err
	}
	known := e.dir.knows(ctx, p.RegistryKey, addr) // before the write, which a reload would see
	if err := e.st.RegistryUpsert(ctx, store.RegistryUpsertParams{AppName: p.RegistryKey, Address: addr, NowMs: e.clock.Now().UnixMilli()}); err != nil {
		return err
	}
	if !known { // a new executor, not a heartbeat
		e.dir.invalidate()
		e.onChange()
		e.auditRegistry(ctx, ActExecutorRegister, p.RegistryKey, addr, "")
	}
	return nil
}

// auditRegistry records a registration, a removal or a refusal of either in
// the audit log (heartbeats are not: they repeat every few seconds). A
// refusal repeated within a minute is recorded once, so an executor that
// keeps knocking with a wrong token does not fill the log. A failed audit
// write is logged; it does not undo the registration.
func (e *Executors) auditRegistry(ctx context.Context, action, appName, addr, reason string) {
	now := e.clock.Now()
	if reason != "" {
		key := action + "|" + appName + "|" + addr + "|" + reason
		e.auditMu.Lock()
		if e.auditedRefusals == nil || len(e.auditedRefusals) > 10_000 {
			e.auditedRefusals = map[string]time.Time{}
		}
		last, seen := e.auditedRefusals[key]
		if !seen || now.Sub(last) >= time.Minute {
			e.auditedRefusals[key] = now
		}
		e.auditMu.Unlock()
		if seen && now.Sub(last) < time.Minute {
			return
		}
	}
	changes := map[string]any{"app_name": appName, "address": addr}
	if reason != "" {
		changes["reason"] = reason
	}
	raw, _ := json.Marshal(changes)
	ev := store.AuditEvent{AtMs: now.UnixMilli(), Principal: "executor:" + appName, Action: action, ObjectType: "executor", ObjectID: addr, Changes: string(raw)}
	if a := ActorFrom(ctx); a.ClientAddr != "" {
		ev.ClientAddr, ev.RequestID = a.ClientAddr, a.RequestID
	}
	if err := e.st.AuditAppend(ctx, ev); err != nil {
		e.log.WithError(err).WithFields(logrus.Fields{"action": action, "address": addr}).Warn("audit an executor registration")
	}
}

// Unregister removes an executor that is shutting down; it needs the same
// credential as its registration.
func (e *Executors) Unregister(ctx context.Context, token string, p xxlwire.RegistryRequest) error {
	if err := validateRegistry(p); err != nil {
		return err
	}
	addr := normalizeAddress(p.RegistryValue)
	if err := e.authorizeRegistry(ctx, token, p.RegistryKey, addr, false); err != nil {
		return err
	}
	if err := e.st.RegistryRemove(ctx, p.RegistryKey, addr); err != nil {
		return err
	}
	e.dir.invalidate()
	e.onChange()
	e.auditRegistry(ctx, ActExecutorRemove, p.RegistryKey, addr, "")
	return nil
}

// registrationLive is how long a registration holds its address against
// other groups (XXL-JOB's dead time, the registry monitor's default).
const registrationLive = 90 * time.Second

// RegistryRefusedError is a registration the group does not allow. Its text
// is what the executor logs (in XXL-JOB's envelope).
type RegistryRefusedError struct {
	AppName string
	Reason  string
}

func (r *RegistryRefusedError) Error() string {
	return fmt.Sprintf("Registry refused for app_name %q: %s.", r.AppName, r.Reason)
}

func (e *Executors) authorizeRegistry(ctx context.Context, token, appName, addr string, register bool) error {
	refuse := func(err error, reason, detail string) error {
		e.log.WithFields(logrus.Fields{"app_name": appName, "address": addr, "reason": detail}).Warn("executor registration refused")
		e.metrics.refused("registry", reason)
		action := ActExecutorRegisterRefused
		if !register {
			action = ActExecutorRemoveRefused
		}
		e.auditRegistry(ctx, action, appName, addr, detail)
		return err
	}
	g, ok, err := e.st.GroupExecutorSettingsByApp(ctx, appName)
	if err != nil {
		return err
	}
	want := e.token
	if g.AccessToken != "" {
		want = g.AccessToken
	}
	if !ok && want != "" && subtle.ConstantTimeCompare([]byte(want), []byte(token)) == 1 {
		// Only a holder of the global token learns whether a group exists.
		const why = "no group has this app_name; create the group first"
		return refuse(&RegistryRefusedError{AppName: appName, Reason: why}, "unknown_group", why)
	}
	if want == "" || subtle.ConstantTimeCompare([]byte(want), []byte(token)) != 1 {
		why := "wrong access token: the group takes the global executor token"
		if g.AccessToken != "" {
			why = "wrong access token: the group has its own executor token"
		}
		return refuse(ErrExecutorToken, "wrong_token", why)
	}
	if register && !g.AcceptRegistrations {
		const why = "the group does not accept registered executors (accept_registrations is false)"
		return refuse(&RegistryRefusedError{AppName: appName, Reason: why}, "registrations_closed", why)
	}
	if register {
		// One live address, one group: the server picks the token it sends to
		// an address by the group it registered in, so a second group must
		// not claim an address another group's executor holds.
		apps, err := e.st.RegistryAppsOf(ctx, addr, e.clock.Now().Add(-registrationLive).UnixMilli())
		if err != nil {
			return err
		}
		for _, other := range apps {
			if other != appName {
				why := fmt.Sprintf("the address is registered by group %q; an executor belongs to one group (it may register here once that registration is removed or silent for %s)", other, registrationLive)
				return refuse(&RegistryRefusedError{AppName: appName, Reason: why}, "address_taken", why)
			}
		}
	}
	if register && e.checkAddress != nil {
		if err := e.checkAddress(ctx, addr); err != nil {
			why := "the address is not allowed by the outbound policy: " + err.Error()
			return refuse(&RegistryRefusedError{AppName: appName, Reason: why}, "address_denied", why)
		}
	}
	return nil
}

// List lists the live executors of an app name ("" = all).
func (e *Executors) List(ctx context.Context, appName string, deadAfterMs int64) ([]store.Executor, error) {
	return e.st.RegistryList(ctx, store.RegistryListParams{AppName: appName, SinceMs: e.clock.Now().UnixMilli() - deadAfterMs})
}

// callbackOutcome maps an XXL-JOB handle code onto a run state as XXL-JOB
// does: 200 succeeded, 502 timed out, anything else failed. The message is
// never read: a run is killed only by a kill the target accepted (see
// service.KillRun), whatever an executor writes afterwards.
func callbackOutcome(c xxlwire.CallbackItem) targets.Outcome {
	switch c.HandleCode {
	case xxlwire.CodeSuccess:
		return targets.Outcome{State: kind.RunSucceeded, Code: c.HandleCode, Message: c.HandleMsg}
	case xxlwire.CodeTimeout:
		return targets.Outcome{State: kind.RunTimedOut, Code: c.HandleCode, Message: c.HandleMsg}
	default:
		return targets.Outcome{State: kind.RunFailed, Code: c.HandleCode, Message: c.HandleMsg}
	}
}

// maxHandleMsg caps a callback message (XXL-JOB keeps 15 000 characters).
const maxHandleMsg = 15000

// CallbackCredential is what a callback was sent with: the executor token
// (XXL-JOB-ACCESS-TOKEN) or a per-run token (functions in Event mode).
type CallbackCredential struct {
	ExecutorToken string
	RunToken      string
}

// CallbackRefusal is a result that was not accepted, and why.
type CallbackRefusal struct {
	RunID  int64
	Reason string
}

// Callback refusal reasons (the metric's reason label).
const (
	RefusedRunToken     = "wrong_run_token"
	RefusedNotHTTP      = "not_an_http_run" // the run's target speaks no executor protocol
	RefusedOtherGroup   = "other_group"
	RefusedNotRecorded  = "dispatch_not_recorded"
	targetRecordTimeout = 2 * time.Second
)

// Callback records run results. A result is accepted only when the caller
// may report that run: with a run token, the run's own token; with an
// executor token, the run was dispatched to an HTTP executor of a group
// whose credential that token is (the group's own token, or the global one
// for groups without). Local runs take no callbacks; Lambda Event runs only
// their run token. Refused results change nothing and are returned and
// counted. The first result of a run wins; later ones are ignored and
// logged, as are results for unknown runs.
func (e *Executors) Callback(ctx context.Context, cred CallbackCredential, items []xxlwire.CallbackItem) ([]CallbackRefusal, error) {
	var refused []CallbackRefusal
	var results []targets.Result
	runs, sent, err := e.callbackRuns(ctx, cred, items)
	if err != nil {
		return nil, err
	}
	tokens := map[int64]string{} // group id -> its executor credential, for this request
	for _, it := range items {
		it.HandleMsg = targets.CleanMessage(it.HandleMsg, maxHandleMsg)
		// The entry is built only to warn: every result of every callback
		// passes here.
		log := func() *logrus.Entry {
			return e.log.WithFields(logrus.Fields{"run_id": it.LogID, "handle_code": it.HandleCode})
		}
		r, ok := runs[it.LogID]
		if !ok {
			log().Warn("callback for an unknown run (log item not found.)")
			continue
		}
		reason, err := e.authorizeCallback(ctx, cred, &r, tokens)
		if err != nil {
			return refused, err
		}
		if reason != "" {
			log().WithFields(logrus.Fields{"reason": reason, "target": r.Target, "group_id": r.GroupID}).Warn("callback refused")
			e.metrics.refused("callback", reason)
			refused = append(refused, CallbackRefusal{RunID: it.LogID, Reason: reason})
			continue
		}
		if r.KillRequested && !r.State.Final() {
			// A kill of the run is in flight: what the executor reports now
			// may be the stopped handler's report (pyxxl sends it before it
			// answers the /kill, the Go client reports 200), or the run's own
			// end just before the kill. The kill's answer decides (see
			// Service.KillRun), so the result is held on the kill and the
			// executor answered at once: it must not wait for a kill that
			// may be waiting for this answer.
			out := callbackOutcome(it)
			held, err := e.st.RunKillHold(ctx, store.RunResult{ID: it.LogID, State: out.State, Code: out.Code, Message: out.Message,
				FinishedMs: e.clock.Now().UnixMilli(), Source: store.SourceCallback})
			if err != nil {
				return refused, err
			}
			if held {
				continue
			}
			// No kill in flight any more: its answer was recorded meanwhile.
		}
		// A result for a run that already ended goes to the recorder too:
		// it is not applied, and the run's log says it came.
		// The target, when only this replica's memory knew it, goes with the
		// outcome: the record may not have it yet.
		results = append(results, targets.Result{RunID: it.LogID, Outcome: callbackOutcome(it), Source: "executor callback", Target: sent[it.LogID], JobID: r.JobID})
	}
	if err := e.record(ctx, results); err != nil {
		return refused, fmt.Errorf("record %d callback results: %w", len(results), err)
	}
	return refused, nil
}

// record writes callback results in one batch when the sink can, and
// returns once they are durable: the executor is answered only then.
func (e *Executors) record(ctx context.Context, results []targets.Result) error {
	if len(results) == 0 {
		return nil
	}
	if b, ok := e.sink.(targets.BatchSink); ok {
		_, err := b.CompleteMany(ctx, results)
		return err
	}
	for _, r := range results {
		if err := e.sink.Complete(ctx, r.RunID, r.Outcome); err != nil {
			return fmt.Errorf("run %d: %w", r.RunID, err)
		}
	}
	return nil
}

// authorizeCallback returns why cred may not report r ("" = it may).
func (e *Executors) authorizeCallback(ctx context.Context, cred CallbackCredential, r *store.RunCallbackView, tokens map[int64]string) (string, error) {
	if cred.RunToken != "" {
		if len(e.runSecret) == 0 || subtle.ConstantTimeCompare([]byte(e.RunToken(r.ID)), []byte(cred.RunToken)) != 1 {
			return RefusedRunToken, nil
		}
		return "", nil
	}
	if r.Target == "" && r.State == kind.RunDispatching {
		return RefusedNotRecorded, nil // callbackRuns waited for it in vain
	}
	if !e.drivers.Capabilities(r.Target).ExecutorProtocol {
		return RefusedNotHTTP, nil // its results come another way (a run token, the driver)
	}
	want, ok := tokens[r.GroupID]
	if !ok {
		g, _, err := e.dir.settingsByID(ctx, r.GroupID)
		if err != nil {
			return "", err
		}
		want = e.token
		if g.AccessToken != "" {
			want = g.AccessToken
		}
		tokens[r.GroupID] = want
	}
	if want == "" || subtle.ConstantTimeCompare([]byte(want), []byte(cred.ExecutorToken)) != 1 {
		return RefusedOtherGroup, nil
	}
	return "", nil
}

// callbackRuns reads the runs a callback reports on, in one statement per
// 1000 runs rather than one per item. With an executor token, the target of
// a run must be known to authorize it: the dispatcher records where a run
// went a few milliseconds after the target accepted it (batched), and a fast
// executor may call back first. When this replica sent the run, it knows the
// target (sent, by run id); runs still dispatching without a target that it
// did not send are read again, together, every 20 ms for at most
// targetRecordTimeout.
func (e *Executors) callbackRuns(ctx context.Context, cred CallbackCredential, items []xxlwire.CallbackItem) (runs map[int64]store.RunCallbackView, sent map[int64]string, err error) {
	ids := make([]int64, len(items))
	for i, it := range items {
		ids[i] = it.LogID
	}
	runs = make(map[int64]store.RunCallbackView, len(items))
	sent = map[int64]string{}
	read := func(ids []int64) (waiting []int64, err error) {
		rs, err := e.st.RunGetForCallback(ctx, ids)
		if err != nil {
			return nil, fmt.Errorf("read the runs of a callback: %w", err)
		}
		for _, r := range rs {
			if cred.RunToken == "" && r.Target == "" && r.State == kind.RunDispatching {
				if t := e.sentTo(r.ID); t != "" {
					r.Target = t
					sent[r.ID] = t
				} else {
					waiting = append(waiting, r.ID)
				}
			}
			runs[r.ID] = r
		}
		return waiting, nil
	}
	waiting, err := read(ids)
	if len(waiting) == 0 || err != nil {
		return runs, sent, err
	}
	deadline := time.NewTimer(targetRecordTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for len(waiting) > 0 {
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-deadline.C:
			_, err := read(waiting)
			return runs, sent, err
		case <-tick.C:
		}
		if waiting, err = read(waiting); err != nil {
			return nil, nil, err
		}
	}
	return runs, sent, nil
}

func (e *Executors) sentTo(runID int64) string {
	if e.sentTarget == nil {
		return ""
	}
	return e.sentTarget(runID)
}
