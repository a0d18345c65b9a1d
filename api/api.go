package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/pprof"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/auth/identity"
	"github.com/ringjob/ringjob/auth/sso"
	"github.com/ringjob/ringjob/internal/logs"
	"github.com/ringjob/ringjob/service"
)

// Defaults of Options.
const (
	DefaultBodyLimit      = 1 << 20 // 1 MiB
	DefaultRequestTimeout = 30 * time.Second
	readyTimeout          = 5 * time.Second
)

// Options are what the REST API is built from.
type Options struct {
	// Service is the service layer over groups, jobs and runs; required.
	Service *service.Service
	// Identity authenticates requests and serves accounts, tokens, role
	// bindings and logins; required.
	Identity *identity.Service
	// Registry is served at /metrics; nil serves no /metrics. The API's own
	// request metrics are registered in it.
	Registry *prometheus.Registry
	// Ready answers /readyz: nil when the server can serve (database
	// reachable, migrations applied). nil uses Service.Ready.
	Ready func(ctx context.Context) error
	// Log receives the access log (debug level) and internal errors; nil
	// discards.
	Log *logrus.Entry
	// BodyLimit caps a request body in bytes; 0 = DefaultBodyLimit. Bigger
	// bodies get 413 payload_too_large.
	BodyLimit int
	// ApplyBodyLimit caps the decompressed body of POST /api/v1/plan and
	// /apply (a whole declaration of jobs, sent gzip-compressed when it is
	// large; the compressed body counts against BodyLimit); 0 =
	// DefaultApplyBodyLimit.
	ApplyBodyLimit int
	// RequestTimeout bounds the work of one request; 0 = DefaultRequestTimeout.
	RequestTimeout time.Duration
	// SecureCookies marks the session cookie Secure even when the request
	// reached this server over plain HTTP (TLS ends at a load balancer). The
	// cookie is Secure anyway when the request came over TLS.
	SecureCookies bool
	// Clock tells time (token expiry arithmetic); nil = the real clock.
	Clock clockwork.Clock
	// SSO, when set, serves single sign-on at /api/v1/sso/login and /callback.
	SSO *sso.Provider
	// TrustedProxies are the reverse proxies (CIDRs) whose X-Forwarded-For
	// is believed for the client address (login limiter, audit log); a
	// request from any other peer is keyed on the peer itself.
	TrustedProxies []netip.Prefix
	// Pprof serves Go's profiles under /debug/pprof/ to admin tokens (the
	// same Bearer token as the REST API). Off by default: a profile shows
	// the server's internals and costs CPU while it is taken.
	Pprof bool
	// Drain, when set, lets the server refuse requests while it stops (see
	// Drain), but /healthz, /readyz, /metrics and ServedWhileDraining.
	Drain *Drain
	// ServedWhileDraining are paths still served during the drain (the
	// executor callbacks, whose results the draining replica records).
	ServedWhileDraining []string
}

// server holds what the handlers share.
type server struct {
	svc     *service.Service
	id      *identity.Service
	ready   func(ctx context.Context) error
	log     *logrus.Entry
	timeout time.Duration
	metrics *httpMetrics

	applyLimit int

	secureCookies bool
	// trustedProxies: see Options.TrustedProxies.
	trustedProxies []netip.Prefix
	clock          clockwork.Clock
	sso            *sso.Provider
}

func (s *server) now() time.Time { return s.clock.Now() }

// New builds the Fiber app that serves /healthz, /readyz, /metrics and the
// REST API under /api/v1. It panics when Service or Identity is nil (a
// wiring mistake).
func New(o Options) *fiber.App {
	if o.Service == nil || o.Identity == nil {
		panic("api.New: Service and Identity are required")
	}
	s := &server{svc: o.Service, id: o.Identity, ready: o.Ready, log: o.Log, timeout: o.RequestTimeout, secureCookies: o.SecureCookies, clock: o.Clock, sso: o.SSO,
		trustedProxies: o.TrustedProxies}
	if s.clock == nil {
		s.clock = clockwork.NewRealClock()
	}
	if s.ready == nil {
		s.ready = o.Service.Ready
	}
	s.log = logs.OrDiscard(s.log)
	s.log = s.log.WithField("service", "api")
	if s.timeout <= 0 {
		s.timeout = DefaultRequestTimeout
	}
	limit := o.BodyLimit
	if limit <= 0 {
		limit = DefaultBodyLimit
	}
	s.applyLimit = o.ApplyBodyLimit
	if s.applyLimit <= 0 {
		s.applyLimit = DefaultApplyBodyLimit
	}
	if o.Registry != nil {
		s.metrics = newHTTPMetrics(o.Registry)
	}

	app := fiber.New(fiber.Config{
		AppName:               "ringjob",
		DisableStartupMessage: true,
		BodyLimit:             limit,
		ErrorHandler:          s.errorHandler,
		Immutable:             true, // strings from a request outlive the handler safely
		CaseSensitive:         true,
		ReadTimeout:           s.timeout,
		WriteTimeout:          s.timeout,
		IdleTimeout:           2 * time.Minute,
	})
	app.Use(s.requestScope)
	app.Use(recover.New()) // a panic becomes a 500 that requestScope logs
	if o.Drain != nil {
		exempt := map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}
		for _, p := range o.ServedWhileDraining {
			exempt[p] = true
		}
		app.Use(o.Drain.middleware(exempt))
	}

	app.Get("/healthz", func(c *fiber.Ctx) error {
		return c.JSON(fiber.Map{"status": "ok"})
	})
	app.Get("/readyz", s.readyz)
	if o.Registry != nil {
		h := fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(o.Registry, promhttp.HandlerOpts{}))
		app.Get("/metrics", func(c *fiber.Ctx) error {
			h(c.Context())
			return nil
		})
	}

	if o.Pprof {
		// A CPU profile must end within RequestTimeout: ?seconds=20 with the default.
		app.Use("/debug/pprof", s.authenticate, s.requireAdmin, pprof.New())
	}

	// Every /api/v1 route is registered through v1 with its permission rule
	// (see rules.go and the package doc); TestPermissionMatrix fails for a
	// route without one.
	v1 := routes{s: s, r: app.Group("/api/v1", s.authenticate)}
	v1.get("/openapi.json", public(), serveOpenAPI)

	v1.post("/groups", system(access.PermGroupsCreate), s.createGroup)
	v1.get("/groups", checkedInHandler(access.PermGroupsRead), s.listGroups)
	v1.get("/groups/:id", onGroup(access.PermGroupsRead), s.getGroup)
	v1.put("/groups/:id", onGroup(access.PermGroupsEdit), s.updateGroup)
	v1.delete("/groups/:id", system(access.PermGroupsDelete), s.deleteGroup)
	v1.put("/groups/:id/executor-token", onGroup(access.PermGroupsEdit), s.setExecutorToken)
	v1.post("/groups/:id/executor-token/rotate", onGroup(access.PermGroupsEdit), s.rotateExecutorToken)

	v1.post("/jobs", checkedInHandler(access.PermJobsWrite), s.createJob)
	v1.get("/jobs", checkedInHandler(access.PermJobsRead), s.listJobs)
	v1.get("/jobs/:id", onJob(access.PermJobsRead), s.getJob)
	v1.put("/jobs/:id", onJob(access.PermJobsWrite), s.updateJob)
	v1.patch("/jobs/:id", onJob(access.PermJobsWrite), s.patchJob)
	v1.delete("/jobs/:id", onJob(access.PermJobsWrite), s.deleteJob)
	v1.post("/jobs/:id/start", onJob(access.PermJobsOperate), s.startJob)
	v1.post("/jobs/:id/stop", onJob(access.PermJobsOperate), s.stopJob)
	v1.post("/jobs/:id/trigger", onJob(access.PermJobsOperate), s.triggerJob)
	v1.get("/jobs/:id/next-fires", onJob(access.PermJobsRead), s.jobNextFires)
	v1.post("/next-fires", authenticated(), s.previewSchedule)

	// A job by its identity: its group's app name and its name.
	v1.get("/groups/:app_name/jobs/:name", onJobName(access.PermJobsRead), s.jobByName(s.getJob))
	v1.put("/groups/:app_name/jobs/:name", onJobName(access.PermJobsWrite), s.jobByName(s.updateJob))
	v1.patch("/groups/:app_name/jobs/:name", onJobName(access.PermJobsWrite), s.jobByName(s.patchJob))
	v1.delete("/groups/:app_name/jobs/:name", onJobName(access.PermJobsWrite), s.jobByName(s.deleteJob))
	v1.post("/groups/:app_name/jobs/:name/start", onJobName(access.PermJobsOperate), s.jobByName(s.startJob))
	v1.post("/groups/:app_name/jobs/:name/stop", onJobName(access.PermJobsOperate), s.jobByName(s.stopJob))
	v1.post("/groups/:app_name/jobs/:name/trigger", onJobName(access.PermJobsOperate), s.jobByName(s.triggerJob))

	v1.get("/runs", checkedInHandler(access.PermRunsRead), s.listRuns)
	v1.get("/runs/:id", onRun(access.PermRunsRead), s.getRun)
	v1.get("/runs/:id/log", onRun(access.PermRunsRead), s.runLog)
	v1.get("/runs/:id/related", onRun(access.PermRunsRead), s.runRelated)
	v1.get("/runs/:id/kill-scope", onRun(access.PermRunsKill), s.killScope)
	v1.post("/runs/:id/kill", onRun(access.PermRunsKill), s.killRun)

	v1.get("/stats", checkedInHandler(access.PermRunsRead), s.getStats)
	v1.get("/job-counts", checkedInHandler(access.PermJobsRead), s.jobCounts)
	v1.get("/executors", checkedInHandler(access.PermGroupsRead), s.listExecutors)
	v1.get("/replicas", system(access.PermSystemRead), s.listReplicas)

	// Alarm channels: their names are what a job's alarm_channels picks
	// from; where they send, and test sends, are for admins.
	v1.get("/alarm-channels", checkedInHandler(access.PermJobsWrite), s.listAlarmChannels)
	v1.post("/alarm-channels/:name/test", system(access.PermSystemManage), s.testAlarmChannel)

	// Jobs as code: a declared state of groups and jobs, planned or applied
	// in one transaction; the handler checks each group it covers.
	v1.post("/plan", checkedInHandler(access.PermJobsRead), s.planApply)
	v1.post("/apply", checkedInHandler(access.PermJobsWrite), s.applyPlan)

	s.workflowRoutes(v1)
	s.accountRoutes(v1)
	s.ssoRoutes(v1)
	return app
}

// requestScope gives each request an id, a deadline, an access log line and
// metrics.
func (s *server) requestScope(c *fiber.Ctx) error {
	start := time.Now()
	id := c.Get("X-Request-Id")
	if !validRequestID(id) {
		id = newRequestID()
	}
	c.Set("X-Request-Id", id)
	c.Locals(localRequestID, id)
	ctx, cancel := context.WithTimeout(c.UserContext(), s.timeout)
	defer cancel()
	c.SetUserContext(ctx)

	err := c.Next()
	if err != nil {
		// Write the error response now so the status below is the final one.
		if herr := s.errorHandler(c, err); herr != nil {
			_ = c.SendStatus(fiber.StatusInternalServerError)
		}
	}
	status := c.Response().StatusCode()
	took := time.Since(start)
	route := c.Route().Path
	if s.metrics != nil {
		s.metrics.observe(c.Method(), route, status, took)
	}
	e := s.log.WithFields(logrus.Fields{
		"request_id":  id,
		"method":      c.Method(),
		"path":        c.Path(),
		"status":      status,
		"duration_ms": took.Milliseconds(),
	})
	switch {
	case isWrite(c.Method()) && strings.HasPrefix(c.Path(), "/api/v1/"):
		// Every API write leaves a line: who changed what, and how it ended.
		e = e.WithFields(auditFields(c))
		if status >= 400 {
			e.Warn("api write refused")
		} else {
			e.Info("api write")
		}
	default:
		e.Debug("request")
	}
	return nil
}

func (s *server) readyz(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), readyTimeout)
	defer cancel()
	if err := s.ready(ctx); err != nil {
		return &apiError{Status: fiber.StatusServiceUnavailable, Code: "unavailable", Message: "not ready: " + err.Error()}
	}
	return c.JSON(fiber.Map{"status": "ready"})
}

const localRequestID = "request_id"

func newRequestID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// validRequestID accepts a caller's X-Request-Id when it is short and plain.
func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// httpMetrics count API requests.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringjob_api_requests_total", Help: "HTTP requests served by the admin API, by method, route and status code.",
		}, []string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "ringjob_api_request_duration_seconds", Help: "Time to serve an admin API request, by method and route.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "route"}),
	}
	m.requests = registerOrExisting(reg, m.requests)
	m.duration = registerOrExisting(reg, m.duration)
	return m
}

// registerOrExisting registers c, or returns the collector registered under
// the same name (two apps on one registry share their metrics).
func registerOrExisting[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}

func (m *httpMetrics) observe(method, route string, status int, took time.Duration) {
	if route == "" || route == "/" {
		route = "other" // unmatched paths must not grow the label set
	}
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(method, route).Observe(took.Seconds())
}
