package lambda_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ringjob/ringjob/functions/jobfn"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/targets"
	"github.com/ringjob/ringjob/targets/lambda"
	"github.com/ringjob/ringjob/targets/targettest"
)

func harnessFor(b *backend, mutate func(t *testing.T, sink targets.Sink, cfg *lambda.Config), query string) targettest.Harness {
	return targettest.Harness{
		NewDriver: func(t *testing.T, sink targets.Sink) targets.Driver {
			return newDriver(t, b, sink, func(cfg *lambda.Config) {
				if mutate != nil {
					mutate(t, sink, cfg)
				}
			})
		},
		Succeed:    b.target("hello", query),
		SucceedLog: []string{"params: conformance"},
		Fail:       b.target("fail", query),
		Long:       b.target("long", query),
		Unknown:    b.target("nope", query),
	}
}

func TestConformanceSync(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b *backend) {
		targettest.Run(t, harnessFor(b, nil, ""))
	})
}

func TestConformanceEvent(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b *backend) {
		if !b.emulated {
			t.Skip("Event mode needs a callback endpoint the function can reach; run against the emulator only")
		}
		targettest.Run(t, harnessFor(b, func(t *testing.T, sink targets.Sink, cfg *lambda.Config) {
			cb := newCallbackEndpoint(t, sink)
			cfg.CallbackURL, cfg.RunToken = cb.URL, runToken
			cfg.EventGrace = 100 * time.Millisecond
		}, "?mode=event"))
	})
}

// runToken signs per-run callback tokens as the server does.
func runToken(runID int64) string {
	mac := hmac.New(sha256.New, []byte("test secret"))
	fmt.Fprintf(mac, "ringjob-run:%d", runID)
	return "rjr_" + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// newCallbackEndpoint stands in for the server's /api/callback: it decodes
// the XXL-JOB callback, checks each item's run token, appends the items'
// log lines (the jobfn extension) to the run's log and completes the run
// through sink.
func newCallbackEndpoint(t *testing.T, sink targets.Sink) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reply := func(code int, msg string) {
			_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "msg": msg})
		}
		var cb jobfn.Callback
		if err := json.NewDecoder(r.Body).Decode(&cb); err != nil {
			reply(500, "invalid callback body: "+err.Error())
			return
		}
		token := r.Header.Get(jobfn.RunTokenHeader)
		for _, it := range cb.CallbackList {
			if token != runToken(it.LogID) {
				reply(500, "wrong run token")
				return
			}
		}
		for _, it := range cb.CallbackList {
			if len(it.Log) > 0 {
				if err := sink.AppendLog(r.Context(), it.LogID, strings.Join(it.Log, "\n")+"\n"); err != nil {
					reply(500, err.Error())
					return
				}
			}
			out := targets.Outcome{State: kind.RunSucceeded, Code: it.HandleCode, Message: it.HandleMsg}
			if it.HandleCode != 200 {
				out.State = kind.RunFailed
			}
			if err := sink.Complete(r.Context(), it.LogID, out); err != nil {
				reply(500, err.Error())
				return
			}
		}
		reply(200, "Success")
	}))
	t.Cleanup(srv.Close)
	return srv
}
