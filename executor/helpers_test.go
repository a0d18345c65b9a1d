package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	testToken = "s3cret-token"
	testApp   = "demo-app"
	waitLimit = 10 * time.Second // real time; only reached when a test fails
)

// wireCallback is one callback item as an XXL-JOB 2.x–3.4 admin reads it.
type wireCallback struct {
	LogID      int64   `json:"logId"`
	LogDateTim int64   `json:"logDateTim"`
	HandleCode int     `json:"handleCode"`
	HandleMsg  *string `json:"handleMsg"`
	// Ringjob and 3.5 admins read the fixed spelling.
	LogDateTime int64 `json:"logDateTime"`
}

func (c wireCallback) msg() string {
	if c.HandleMsg == nil {
		return ""
	}
	return *c.HandleMsg
}

// fakeAdmin stands in for the Ringjob server (or an XXL-JOB admin): it
// parses exactly the XXL-JOB wire format and records what executors send.
type fakeAdmin struct {
	t   *testing.T
	srv *httptest.Server

	mu            sync.Mutex
	down          bool // answer HTTP 503
	registry      []map[string]string
	removes       []map[string]string
	callbackPosts [][]wireCallback
	problems      []string
	changed       chan struct{}
}

func newFakeAdmin(t *testing.T) *fakeAdmin {
	a := &fakeAdmin{t: t, changed: make(chan struct{})}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	return a
}

func (a *fakeAdmin) URL() string { return a.srv.URL }

func (a *fakeAdmin) setDown(down bool) {
	a.mu.Lock()
	a.down = down
	a.mu.Unlock()
}

func (a *fakeAdmin) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	defer func() {
		close(a.changed)
		a.changed = make(chan struct{})
		a.mu.Unlock()
	}()
	if a.down {
		http.Error(w, "admin is down", http.StatusServiceUnavailable)
		return
	}
	answer := func(code int, msg string) {
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "msg": msg, "data": nil})
	}
	problem := func(p string) {
		a.problems = append(a.problems, p)
		answer(500, p)
	}
	switch {
	case r.Method != http.MethodPost:
		problem("method " + r.Method)
		return
	case r.Header.Get("Content-Type") != "application/json;charset=UTF-8":
		problem("content type " + r.Header.Get("Content-Type"))
		return
	case r.Header.Get("XXL-JOB-ACCESS-TOKEN") != testToken:
		problem("The access token is wrong.")
		return
	case r.Header.Get("XXL-JOB-APPNAME") != testApp:
		problem("appname header " + r.Header.Get("XXL-JOB-APPNAME"))
		return
	}
	switch r.URL.Path {
	case "/api/registry", "/api/registryRemove":
		var reg map[string]string
		if err := json.Unmarshal(body, &reg); err != nil || reg["registryGroup"] != "EXECUTOR" ||
			reg["registryKey"] == "" || reg["registryValue"] == "" {
			problem("Illegal Argument. " + string(body))
			return
		}
		if r.URL.Path == "/api/registry" {
			a.registry = append(a.registry, reg)
		} else {
			a.removes = append(a.removes, reg)
		}
	case "/api/callback":
		var items []wireCallback
		if err := json.Unmarshal(body, &items); err != nil {
			problem("callback body is not an array: " + string(body))
			return
		}
		a.callbackPosts = append(a.callbackPosts, items)
	default:
		problem("unknown path " + r.URL.Path)
		return
	}
	answer(200, "")
}

// callbacks returns every callback item received, in order.
func (a *fakeAdmin) callbacks() []wireCallback {
	a.mu.Lock()
	defer a.mu.Unlock()
	var all []wireCallback
	for _, p := range a.callbackPosts {
		all = append(all, p...)
	}
	return all
}

func (a *fakeAdmin) callback(logID int64) (wireCallback, bool) {
	for _, c := range a.callbacks() {
		if c.LogID == logID {
			return c, true
		}
	}
	return wireCallback{}, false
}

// waitCallback waits for the callback of logID.
func (a *fakeAdmin) waitCallback(t *testing.T, logID int64) wireCallback {
	t.Helper()
	var cb wireCallback
	a.waitFor(t, "callback of log "+itoa(logID), func() bool {
		var ok bool
		cb, ok = a.callback(logID)
		return ok
	})
	return cb
}

// waitFor waits until cond holds, re-checking whenever the admin gets a call.
func (a *fakeAdmin) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		a.mu.Lock()
		ch := a.changed
		a.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-time.After(20 * time.Millisecond): // conditions on files and state too
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (a *fakeAdmin) snapshot() (registry, removes []map[string]string, problems []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]map[string]string(nil), a.registry...), append([]map[string]string(nil), a.removes...),
		append([]string(nil), a.problems...)
}

// bundle is what a test needs: an executor served on a real socket, a fake
// admin and a fake clock.
type bundle struct {
	e      *Executor
	admin  *fakeAdmin
	clock  *clockwork.FakeClock
	url    string // executor base URL, no trailing slash
	dir    string
	client *http.Client
}

var testStart = time.Date(2024, 3, 10, 12, 0, 0, 0, time.Local)

// setup builds an executor (not started) served by an httptest server.
// Later options override the defaults here.
func setup(t *testing.T, opts ...Option) *bundle {
	t.Helper()
	b := &bundle{
		admin:  newFakeAdmin(t),
		clock:  clockwork.NewFakeClockAt(testStart),
		dir:    t.TempDir(),
		client: &http.Client{Transport: &http.Transport{}},
	}
	srv := httptest.NewUnstartedServer(nil)
	b.url = "http://" + srv.Listener.Addr().String()
	base := []Option{
		WithAdminAddresses(b.admin.URL()),
		WithAccessToken(testToken),
		WithAppName(testApp),
		WithAddress(b.url + "/"),
		WithLogDir(b.dir),
		WithClock(b.clock),
		WithShutdownGrace(0),
	}
	e, err := New(append(base, opts...)...)
	require.NoError(t, err)
	b.e = e
	srv.Config.Handler = e.Handler()
	srv.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		require.NoError(t, e.Stop(ctx))
		srv.Close()
		b.admin.srv.Close()
		b.client.CloseIdleConnections()
		_, _, problems := b.admin.snapshot()
		require.Empty(t, problems, "the admin saw malformed calls")
	})
	return b
}

// setupStarted is setup plus Start.
func setupStarted(t *testing.T, opts ...Option) *bundle {
	t.Helper()
	b := setup(t, opts...)
	require.NoError(t, b.e.Start(context.Background()))
	return b
}

// resp is an executor reply as the admin sees it.
type resp struct {
	Code    int             `json:"code"`
	Msg     string          `json:"msg"`
	Content json.RawMessage `json:"content"`
	Data    json.RawMessage `json:"data"`
	raw     map[string]json.RawMessage
}

// call sends method path with body (JSON-encoded unless a string) and the
// given token ("" sends none).
func (b *bundle) call(t *testing.T, method, path string, body any, token string) resp {
	t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(v)
	default:
		data, err := json.Marshal(v)
		require.NoError(t, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, b.url+path, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json;charset=UTF-8")
	if token != "" {
		req.Header.Set("XXL-JOB-ACCESS-TOKEN", token)
	}
	res, err := b.client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "text/html;charset=UTF-8", res.Header.Get("Content-Type"))
	data, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var r resp
	require.NoError(t, json.Unmarshal(data, &r), string(data))
	require.NoError(t, json.Unmarshal(data, &r.raw))
	require.Contains(t, r.raw, "content", "2.x admins read content")
	require.Contains(t, r.raw, "data", "3.x admins read data")
	require.JSONEq(t, string(r.Content), string(r.Data))
	return r
}

func (b *bundle) post(t *testing.T, path string, body any) resp {
	t.Helper()
	return b.call(t, http.MethodPost, path, body, testToken)
}

// trig is a trigger as the admin sends it (every TriggerParam field).
type trig map[string]any

func (b *bundle) trig(jobID, logID int64, handler string) trig {
	now := b.clock.Now().UnixMilli()
	return trig{
		"jobId": jobID, "executorHandler": handler, "executorParams": "",
		"executorBlockStrategy": "SERIAL_EXECUTION", "executorTimeout": 0,
		"logId": logID, "logDateTime": now, "glueType": "BEAN", "glueSource": "",
		"glueUpdatetime": now, "broadcastIndex": 0, "broadcastTotal": 1,
	}
}

func (tr trig) with(k string, v any) trig {
	out := trig{}
	for kk, vv := range tr {
		out[kk] = vv
	}
	out[k] = v
	return out
}

// run posts a trigger to /run and requires it to be accepted.
func (b *bundle) run(t *testing.T, tr trig) {
	t.Helper()
	r := b.post(t, "/run", tr)
	require.Equal(t, 200, r.Code, r.Msg)
}

// advanceUntil advances the fake clock by step until cond holds.
func (b *bundle) advanceUntil(t *testing.T, step time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out advancing the clock until %s", what)
		}
		b.clock.Advance(step)
		time.Sleep(5 * time.Millisecond) // let the woken goroutines run
	}
}

// gate controls test handlers: each run announces its logId on started,
// then waits for release (or, if it honours ctx, for ctx).
type gate struct {
	started chan int64
	release chan struct{}
	causes  chan error // the cause a ctx-honouring handler saw
	ended   chan int64 // logIds whose handler returned
}

func newGate() *gate {
	return &gate{started: make(chan int64, 16), release: make(chan struct{}), causes: make(chan error, 16), ended: make(chan int64, 16)}
}

// blocking honours ctx.
func (g *gate) blocking(ctx context.Context, job *Job) error {
	defer func() { g.ended <- job.LogID }()
	g.started <- job.LogID
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		g.causes <- context.Cause(ctx)
		return ctx.Err()
	}
}

// stubborn ignores ctx.
func (g *gate) stubborn(ctx context.Context, job *Job) error {
	defer func() { g.ended <- job.LogID }()
	g.started <- job.LogID
	<-g.release
	g.causes <- context.Cause(ctx)
	return nil
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func itoa(n int64) string { return string(mustJSON(n)) }

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
