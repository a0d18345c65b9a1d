package httptarget_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/targets"
	httptarget "github.com/ringjob/ringjob/targets/http"
)

// rawExecutor is an XXL-JOB executor written from the protocol reference, not
// our SDK: it answers like a Java 2.x executor (content) or a 3.x one (data).
type rawExecutor struct {
	t        *testing.T
	token    string
	dialect  string // "2.x" or "3.x"
	mu       sync.Mutex
	requests []rawRequest
	busy     bool
}

type rawRequest struct {
	Path    string
	Token   string
	AppName string
	Body    map[string]any
}

func (e *rawExecutor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	e.mu.Lock()
	e.requests = append(e.requests, rawRequest{Path: r.URL.Path, Token: r.Header.Get("XXL-JOB-ACCESS-TOKEN"), AppName: r.Header.Get("XXL-JOB-APPNAME"), Body: body})
	busy := e.busy
	e.mu.Unlock()
	w.Header().Set("Content-Type", "text/html;charset=UTF-8")
	reply := func(code int, msg string, payload any) {
		key := "content"
		if e.dialect == "3.x" {
			key = "data"
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "msg": msg, key: payload})
	}
	if r.Method != http.MethodPost {
		reply(500, "invalid request, HttpMethod not support.", nil)
		return
	}
	if e.token != "" && r.Header.Get("XXL-JOB-ACCESS-TOKEN") != e.token {
		reply(500, "The access token is wrong.", nil)
		return
	}
	switch r.URL.Path {
	case "/beat", "/run", "/trigger", "/kill":
		reply(200, "", nil)
	case "/idleBeat":
		if busy {
			reply(500, "job thread is running or has trigger queue.", nil)
			return
		}
		reply(200, "", nil)
	case "/log":
		reply(200, "", map[string]any{"fromLineNum": body["fromLineNum"], "toLineNum": 3, "logContent": "line 2<br>line 3", "isEnd": false})
	default:
		reply(500, "invalid request, uri-mapping("+r.URL.Path+") not found.", nil)
	}
}

func (e *rawExecutor) last() rawRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.requests[len(e.requests)-1]
}

func TestWireFormat(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{"2.x", "3.x"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ex := &rawExecutor{t: t, token: "secret-token", dialect: dialect}
			srv := httptest.NewServer(ex)
			defer srv.Close()
			logDate := time.Date(2026, 6, 1, 12, 0, 5, 0, time.UTC)
			d := httptarget.New(httptarget.Config{
				AccessToken: "secret-token",
				LogDateFor:  func(context.Context, int64) (time.Time, error) { return logDate, nil },
			})
			ctx := context.Background()
			target := srv.URL + "/" // registry values carry a trailing slash

			res, err := d.Run(ctx, targets.Request{RunID: 42, JobID: 7, Target: target, Handler: "demoJobHandler", Params: "a=1; $(x)",
				ShardIndex: 2, ShardTotal: 3, Timeout: 30 * time.Second, ScheduledAt: logDate, BlockStrategy: "SERIAL_EXECUTION"})
			require.NoError(t, err)
			require.Nil(t, res.Done, "an executor answers at once; the outcome comes by callback")
			got := ex.last()
			require.Equal(t, "/run", got.Path)
			require.Equal(t, "secret-token", got.Token)
			require.Equal(t, map[string]any{"jobId": 7.0, "executorHandler": "demoJobHandler", "executorParams": "a=1; $(x)",
				"executorBlockStrategy": "SERIAL_EXECUTION", "executorTimeout": 30.0, "logId": 42.0, "logDateTime": float64(logDate.UnixMilli()),
				"glueType": "BEAN", "glueSource": "", "glueUpdatetime": 0.0, "broadcastIndex": 2.0, "broadcastTotal": 3.0}, got.Body)

			require.NoError(t, d.Beat(ctx, target))
			require.NoError(t, d.IdleBeat(ctx, target, 7))
			require.Equal(t, map[string]any{"jobId": 7.0}, ex.last().Body)
			ex.mu.Lock()
			ex.busy = true
			ex.mu.Unlock()
			err = d.IdleBeat(ctx, target, 7)
			require.ErrorIs(t, err, targets.ErrBusy)
			require.ErrorContains(t, err, "job thread is running or has trigger queue.")

			require.NoError(t, d.Kill(ctx, target, 42, 7))
			require.Equal(t, "/kill", ex.last().Path)

			chunk, err := d.Log(ctx, target, 42, 2)
			require.NoError(t, err)
			require.Equal(t, targets.LogChunk{FromLine: 2, ToLine: 3, Content: "line 2<br>line 3\n"}, chunk)
			body := ex.last().Body
			require.Equal(t, float64(logDate.UnixMilli()), body["logDateTim"], "2.x–3.4 spelling")
			require.Equal(t, float64(logDate.UnixMilli()), body["logDateTime"], "3.5 spelling")
			require.Equal(t, 42.0, body["logId"])
			require.Equal(t, 2.0, body["fromLineNum"])
		})
	}
}

func TestProtocol35UsesTriggerAndAppName(t *testing.T) {
	t.Parallel()
	ex := &rawExecutor{t: t, token: "group-token", dialect: "3.x"}
	srv := httptest.NewServer(ex)
	defer srv.Close()
	d := httptarget.New(httptarget.Config{AccessToken: "global", AuthFor: func(context.Context, string, int64) (httptarget.Auth, error) {
		return httptarget.Auth{AppName: "orders", AccessToken: "group-token", Protocol35: true}, nil
	}})
	_, err := d.Run(context.Background(), targets.Request{RunID: 1, JobID: 1, Target: srv.URL, ScheduledAt: time.Now()})
	require.NoError(t, err)
	got := ex.last()
	require.Equal(t, "/trigger", got.Path)
	require.Equal(t, "orders", got.AppName)
	require.Equal(t, "group-token", got.Token)
}

func TestErrors(t *testing.T) {
	t.Parallel()
	ex := &rawExecutor{t: t, token: "right", dialect: "2.x"}
	srv := httptest.NewServer(ex)
	defer srv.Close()
	ctx := context.Background()

	d := httptarget.New(httptarget.Config{AccessToken: "wrong"})
	_, err := d.Run(ctx, targets.Request{RunID: 1, Target: srv.URL, ScheduledAt: time.Now()})
	require.ErrorIs(t, err, httptarget.ErrExecutor)
	require.ErrorContains(t, err, "The access token is wrong.")

	down := httptest.NewServer(http.NotFoundHandler())
	url := down.URL
	down.Close()
	err = d.Beat(ctx, url)
	require.Error(t, err, "a stopped executor fails its beat")

	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { time.Sleep(2 * time.Second) }))
	defer slow.Close()
	quick := httptarget.New(httptarget.Config{RequestTimeout: 200 * time.Millisecond})
	start := time.Now()
	err = quick.Beat(ctx, slow.URL)
	require.Error(t, err)
	require.Less(t, time.Since(start), 1500*time.Millisecond, "the request timeout bounds a call")

	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("<html>nginx</html>")) }))
	defer html.Close()
	err = quick.Beat(ctx, html.URL)
	require.ErrorContains(t, err, "not XXL-JOB JSON")

	for _, bad := range []string{"ftp://x", "http://", "http:///path", "local://x"} {
		require.True(t, errors.Is(d.ValidateTarget(bad), targets.ErrUnknownTarget), bad)
	}
	require.NoError(t, d.ValidateTarget("https://exec.internal:9999/"))
}
