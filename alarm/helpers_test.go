package alarm

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ringjob/ringjob/internal/kind"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitLimit bounds waits on signals; it is only reached when a test fails.
const waitLimit = 10 * time.Second

// Secrets used across the tests; none may appear in an error, a log or fmt
// output.
const (
	slackToken    = "xSlackTokenPart0123456789abcd"
	dingToken     = "0d1n6acce55t0ken0123456789abcdef0123456789abcdef0123456789abcdef"
	dingSecret    = "SECdingsigningsecret0123456789abcdef"
	wecomKey      = "693a91f6-7xxx-4bc4-97a0-0ec2sifa5aaa"
	feishuHook    = "f19a7b3c-secret-hook-id-0123456789ab"
	feishuSecret  = "feishuSigningSecret0123456789"
	webhookToken  = "whQueryToken0123456789abcdefgh"
	webhookSecret = "webhookHmacSecret0123456789"
	bearerToken   = "Bearer headerSecretToken0123456789"
	smtpPassword  = "smtp-Passw0rd-very-secret-123"
)

var allSecrets = []string{slackToken, dingToken, dingSecret, wecomKey, feishuHook, feishuSecret,
	webhookToken, webhookSecret, bearerToken, "headerSecretToken0123456789", smtpPassword}

// requireNoSecret fails when s contains any test secret.
func requireNoSecret(t *testing.T, s string) {
	t.Helper()
	for _, secret := range allSecrets {
		require.NotContains(t, s, secret, "a secret leaked")
	}
}

// testStart is the fake clock's start.
var testStart = time.Date(2026, 3, 29, 0, 0, 3, 0, time.UTC)

// failureEvent is the alarm of story 2: billing-close failed after its last retry.
func failureEvent() Event {
	return Event{
		Kind:        kind.AlarmFailure,
		JobID:       42,
		JobName:     "billing-close",
		GroupName:   "billing",
		RunID:       9001,
		State:       "failed",
		Code:        500,
		Message:     "shard 17: upstream ledger returned 503",
		Attempt:     4,
		ScheduledAt: time.Date(2026, 3, 29, 2, 0, 0, 0, time.FixedZone("CEST", 2*3600)),
		FinishedAt:  time.Date(2026, 3, 29, 2, 10, 0, 0, time.FixedZone("CEST", 2*3600)),
		ConsoleURL:  "https://ringjob.example.com/runs/9001",
	}
}

// recoveryEvent is the next success after it.
func recoveryEvent() Event {
	ev := failureEvent()
	ev.Kind = kind.AlarmRecovery
	ev.RunID = 9101
	ev.State = "succeeded"
	ev.Code = 200
	ev.Message = "ok"
	ev.Attempt = 1
	ev.ConsoleURL = "https://ringjob.example.com/runs/9101"
	return ev
}

// httpReq is one request an HTTP sink received.
type httpReq struct {
	Method string
	Path   string
	Query  string // raw query
	Header http.Header
	Body   []byte
}

// httpSink is a real HTTP server standing in for a chat robot or a webhook
// receiver: it records requests and answers with a configurable status and
// body.
type httpSink struct {
	srv *httptest.Server

	mu     sync.Mutex
	reqs   []httpReq
	status int
	body   string
	echo   bool // answer with the request URI and Authorization, as some robots do
	got    chan struct{}
}

func newHTTPSink(t *testing.T) *httpSink {
	t.Helper()
	s := &httpSink{status: 200, body: `{"errcode":0,"errmsg":"ok"}`, got: make(chan struct{}, 100)}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, httpReq{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
		status, respBody := s.status, s.body
		if s.echo {
			respBody += " you sent " + r.URL.RequestURI() + " " + r.Header.Get("Authorization")
		}
		s.mu.Unlock()
		w.WriteHeader(status)
		_, _ = io.WriteString(w, respBody)
		s.got <- struct{}{}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// answer sets the next answers.
func (s *httpSink) answer(status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.body = status, body
}

// last is the latest request.
func (s *httpSink) last(t *testing.T) httpReq {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	require.NotEmpty(t, s.reqs, "no request reached the sink")
	return s.reqs[len(s.reqs)-1]
}

func (s *httpSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

// deps are sender dependencies talking to the sink with a fake clock.
func (s *httpSink) deps(clock clockwork.Clock) Deps {
	return Deps{Clock: clock, HTTPClient: s.srv.Client()}
}

// url is the sink's base URL plus path and query.
func (s *httpSink) url(pathAndQuery string) string {
	return s.srv.URL + pathAndQuery
}

// ctxT is a context bounded by waitLimit.
func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

// lines splits text for readable comparisons.
func lines(s string) []string { return strings.Split(strings.TrimRight(s, "\n"), "\n") }

// eventually waits until cond holds, polling.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(time.Millisecond)
	}
}
