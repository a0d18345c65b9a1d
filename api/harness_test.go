package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ringjob/ringjob/api"
	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/auth/identity"
	"github.com/ringjob/ringjob/auth/sso"
	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
	"github.com/ringjob/ringjob/targets/localexec"
)

// TestMain checks that the tests leave no goroutine behind: apps, schedulers
// and drivers are all shut down by their cleanups.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(dbtest.Wrap(idleClosing{m}), dbtest.IgnoreFasthttp...)
}

// idleClosing closes the HTTP client's idle connections after the tests,
// so their reader goroutines do not count as leaks.
type idleClosing struct{ m *testing.M }

func (w idleClosing) Run() int {
	code := w.m.Run()
	http.DefaultClient.CloseIdleConnections()
	return code
}

// kinds are the databases every API test runs on.
var kinds = storetest.Dialects

// bundle is what an API test needs: a real store, a real scheduler with the
// local:// driver, the service, and the app listening on a real port.
type bundle struct {
	t     *testing.T
	st    *store.Store
	svc   *service.Service
	id    *identity.Service
	app   *fiber.App
	url   string
	token string
	logs  *syncBuffer
}

type setupOpts struct {
	clock     clockwork.Clock // the service's clock; nil = real
	noSched   bool            // no scheduler (and no local driver processes)
	ready     func(context.Context) error
	bodyLimit int
	access    identity.AccessOptions // sessions and limiter settings
	watch     bool                   // start the auth watcher (credential cache)
	secure    bool                   // api.Options.SecureCookies
	sso       func(url string) *sso.Provider
	pprof     bool
	runScan   int                   // service.Options.RunScanWindow
	alarms    service.AlarmChannels // alarm channels to list and test
	proxies   []netip.Prefix        // api.Options.TrustedProxies
}

func openStore(t *testing.T, dialect string) *store.Store {
	t.Helper()
	return storetest.Open(t, dialect)
}

// cheapHashes are argon2id costs for tests: the hashing is the same code,
// with little memory and one pass.
var cheapHashes = access.HashParams{Time: 1, MemoryKiB: 1024, Threads: 1}

func setup(t *testing.T, dialect string, o setupOpts) *bundle {
	t.Helper()
	ctx := context.Background()
	st := openStore(t, dialect)
	logs := &syncBuffer{}
	l := logrus.New()
	l.SetOutput(logs)
	l.SetLevel(logrus.DebugLevel)
	l.SetFormatter(&logrus.JSONFormatter{})
	log := logrus.NewEntry(l)

	reg := targets.NewRegistry()
	var sched *scheduler.Scheduler
	var sink targets.Sink = nopSink{}
	if !o.noSched {
		var err error
		sched, err = scheduler.New(scheduler.Options{
			Config: scheduler.Config{NodeID: fmt.Sprintf("api-test-%d", time.Now().UnixNano()), StopGrace: 2 * time.Second},
			Store:  st, Drivers: reg, Log: log.WithField("component", "scheduler"),
		})
		require.NoError(t, err)
		sink = sched.Sink()
	}
	drv, err := localexec.New(localexec.Config{
		Commands: []localexec.Command{
			{Name: "echo", Argv: []string{"/bin/sh", "-c", `printf '%s\n' "$RINGJOB_PARAMS"`}}, // params verbatim, never parsed
			{Name: "sleep", Argv: []string{"/bin/sleep", "30"}},
		},
		KillGrace: time.Second,
	}, sink, log.WithField("component", "localexec"))
	require.NoError(t, err)
	reg.Register("local", drv)
	if sched != nil {
		require.NoError(t, sched.Start(ctx))
		t.Cleanup(func() { sched.Stop(context.Background()) })
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = drv.Close(cctx)
	})

	if o.access.PasswordHash == (access.HashParams{}) {
		o.access.PasswordHash = cheapHashes // the race detector makes argon2id's real costs take seconds
	}
	id := identity.New(identity.Options{Store: st, Clock: o.clock, Access: o.access, Log: log.WithField("component", "identity")})
	so := service.Options{Store: st, Drivers: reg, Clock: o.clock, Log: log.WithField("component", "service"), Alarms: o.alarms,
		RunScanWindow: o.runScan, OnAuthChange: id.AuthChanged}
	if sched != nil {
		so.Scheduler = sched
	}
	svc := service.New(so)
	token, err := id.EnsureAdminToken(ctx, "")
	require.NoError(t, err)
	require.NotEmpty(t, token)

	if o.watch {
		w := id.Watcher()
		require.NoError(t, w.Start(ctx))
		t.Cleanup(w.Stop)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var ssoProv *sso.Provider
	if o.sso != nil {
		ssoProv = o.sso("http://" + ln.Addr().String())
	}
	app := api.New(api.Options{
		Service: svc, Identity: id, Registry: prometheus.NewRegistry(), Ready: o.ready, Log: log, BodyLimit: o.bodyLimit, Pprof: o.pprof,
		SecureCookies: o.secure, Clock: o.clock, SSO: ssoProv, TrustedProxies: o.proxies,
	})
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.ShutdownWithTimeout(5 * time.Second) })
	return &bundle{t: t, st: st, svc: svc, id: id, app: app, url: "http://" + ln.Addr().String(), token: token, logs: logs}
}

// resp is an HTTP answer.
type resp struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic value.
func (r resp) JSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &m), "body: %s", r.Body)
	return m
}

// errCode and errField read the error envelope.
func (r resp) errCode(t *testing.T) (code, field, msg string) {
	t.Helper()
	m := r.JSON(t)
	e, ok := m["error"].(map[string]any)
	require.True(t, ok, "no error envelope in %s", r.Body)
	code, _ = e["code"].(string)
	field, _ = e["field"].(string)
	msg, _ = e["message"].(string)
	return code, field, msg
}

// call sends a request with the bundle's token. body is sent as is when it
// is a string or []byte, JSON-encoded otherwise; nil sends no body. hdr are
// header name/value pairs; an "Authorization" pair replaces the token.
func (b *bundle) call(method, path string, body any, hdr ...string) resp {
	b.t.Helper()
	if n, ok := body.(declaredBody); ok {
		return b.callDeclared(method, path, int(n))
	}
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(v)
	case []byte:
		rd = bytes.NewReader(v)
	default:
		raw, err := json.Marshal(v)
		require.NoError(b.t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, b.url+path, rd)
	require.NoError(b.t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(b.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(b.t, err)
	return resp{Status: res.StatusCode, Header: res.Header, Body: raw}
}

// declaredBody, as a body, sends only the headers of a request whose
// Content-Length is that many bytes. The server refuses an oversized body
// from its headers; sending the bytes too would race its early close (the
// client may see a reset instead of the 413).
type declaredBody int

func (b *bundle) callDeclared(method, path string, n int) resp {
	b.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(b.url, "http://"))
	require.NoError(b.t, err)
	defer conn.Close()
	require.NoError(b.t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"params\": \"",
		method, path, b.token, n)
	require.NoError(b.t, err)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(b.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(b.t, err)
	return resp{Status: res.StatusCode, Header: res.Header, Body: raw}
}

// must sends a request and requires the status.
func (b *bundle) must(status int, method, path string, body any, hdr ...string) map[string]any {
	b.t.Helper()
	r := b.call(method, path, body, hdr...)
	require.Equal(b.t, status, r.Status, "%s %s: %s", method, path, r.Body)
	if len(r.Body) == 0 {
		return nil
	}
	return r.JSON(b.t)
}

// counts reads how many groups, jobs and runs exist (straight from the
// database, so the API under test cannot fool it).
func (b *bundle) counts() [3]int {
	b.t.Helper()
	var out [3]int
	for i, tbl := range []string{"job_groups", "jobs", "runs"} {
		require.NoError(b.t, b.st.DB().QueryRow("SELECT COUNT(*) FROM "+tbl).Scan(&out[i]))
	}
	return out
}

// group creates a group with the given members and returns its id.
func (b *bundle) group(appName string, members ...string) int64 {
	b.t.Helper()
	if members == nil {
		members = []string{}
	}
	g := b.must(201, "POST", "/api/v1/groups", map[string]any{"app_name": appName, "title": "t", "members": members})
	return int64(g["id"].(float64))
}

// job creates a job from fields and returns it.
func (b *bundle) job(fields map[string]any) map[string]any {
	b.t.Helper()
	return b.must(201, "POST", "/api/v1/jobs", fields)
}

// waitRun polls a run until cond holds (or fails after the deadline).
func (b *bundle) waitRun(id int64, what string, cond func(run map[string]any) bool) map[string]any {
	b.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		run := b.must(200, "GET", fmt.Sprintf("/api/v1/runs/%d", id), nil)
		if cond(run) {
			return run
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("run %d: %s did not happen in time; last seen %v", id, what, run)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func id(m map[string]any) int64 { return int64(m["id"].(float64)) }

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// nopSink is the local driver's sink when a test runs no scheduler.
type nopSink struct{}

func (nopSink) Complete(context.Context, int64, targets.Outcome) error { return nil }
func (nopSink) AppendLog(context.Context, int64, string) error         { return nil }
func (nopSink) ReadLog(context.Context, int64, int) (targets.LogChunk, error) {
	return targets.LogChunk{}, nil
}
