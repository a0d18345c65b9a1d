package lambda_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/ringjob/ringjob/functions/jobfn"
	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/targets"
	"github.com/ringjob/ringjob/targets/lambda"
	"github.com/ringjob/ringjob/targets/targettest"
)

// fakeLambda is a scripted Lambda API, for what the emulator will not do on
// demand (throttle, fail with 5xx, hang).
type fakeLambda struct {
	*httptest.Server
	// invoke answers the n-th (1-based) Invoke; get answers GetFunction
	// (nil: the function exists).
	invoke func(n int, w http.ResponseWriter, r *http.Request)
	get    func(w http.ResponseWriter, r *http.Request)

	mu       sync.Mutex
	invokes  int
	gets     int
	payloads [][]byte
	headers  []http.Header
}

func newFakeLambda(t *testing.T, invoke func(n int, w http.ResponseWriter, r *http.Request)) *fakeLambda {
	f := &fakeLambda{invoke: invoke}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			f.mu.Lock()
			f.gets++
			get := f.get
			f.mu.Unlock()
			if get != nil {
				get(w, r)
				return
			}
			_, _ = w.Write([]byte(`{"Configuration":{"FunctionName":"fn","State":"Active"}}`))
			return
		}
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.invokes++
		n := f.invokes
		f.payloads = append(f.payloads, body)
		f.headers = append(f.headers, r.Header.Clone())
		f.mu.Unlock()
		f.invoke(n, w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeLambda) counts() (invokes, gets int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.invokes, f.gets
}

func (f *fakeLambda) payload(i int) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.payloads[i]
}

func (f *fakeLambda) header(i int) http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.headers[i]
}

func (f *fakeLambda) setGet(get func(w http.ResponseWriter, r *http.Request)) {
	f.mu.Lock()
	f.get = get
	f.mu.Unlock()
}

func apiError(w http.ResponseWriter, status int, typ string) {
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"Type":"User","Message":"scripted ` + typ + `","message":"scripted ` + typ + `"}`))
}

func answer(w http.ResponseWriter, payload, tail string) {
	if tail != "" {
		w.Header().Set("X-Amz-Log-Result", base64.StdEncoding.EncodeToString([]byte(tail)))
	}
	w.Header().Set("X-Amz-Executed-Version", "$LATEST")
	_, _ = w.Write([]byte(payload))
}

type fakeBundle struct {
	f    *fakeLambda
	d    *lambda.Driver
	sink *targettest.MemorySink
	ctx  context.Context
}

func setupFake(t *testing.T, invoke func(n int, w http.ResponseWriter, r *http.Request), mutate func(*lambda.Config)) *fakeBundle {
	t.Helper()
	t.Parallel()
	f := newFakeLambda(t, invoke)
	sink := targettest.NewMemorySink()
	d := newDriver(t, &backend{endpoint: f.URL}, sink, func(cfg *lambda.Config) {
		cfg.MaxAttempts = 3
		cfg.BackoffBase, cfg.BackoffMax = time.Millisecond, 5*time.Millisecond
		if mutate != nil {
			mutate(cfg)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), runWait)
	t.Cleanup(cancel)
	return &fakeBundle{f: f, d: d, sink: sink, ctx: ctx}
}

var nextID atomic.Int64

func request(target string) targets.Request {
	return targets.Request{RunID: 1000 + nextID.Add(1), JobID: 7, Target: target, Handler: "h", Params: `{"a":1}`, ShardIndex: 2, ShardTotal: 5,
		ScheduledAt: time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC), Attempt: 1}
}

func (b *fakeBundle) run(t *testing.T, req targets.Request) targets.Outcome {
	t.Helper()
	disp, err := b.d.Run(b.ctx, req)
	if err != nil || disp.Done != nil {
		t.Fatalf("Run: %+v, %v", disp, err)
	}
	return b.sink.WaitOutcome(t, req.RunID, runWait)
}

func TestRetries(t *testing.T) {
	t.Run("throttling is retried until it passes", func(t *testing.T) {
		b := setupFake(t, func(n int, w http.ResponseWriter, _ *http.Request) {
			if n < 3 {
				apiError(w, 429, "TooManyRequestsException")
				return
			}
			answer(w, `{"ok":true,"result":"done"}`, "START x\nworking\nEND x\n")
		}, nil)
		req := request("lambda://us-east-1/fn")
		out := b.run(t, req)
		if out.State != kind.RunSucceeded || out.Message != `"done"` {
			t.Fatalf("outcome %+v", out)
		}
		if n, _ := b.f.counts(); n != 3 {
			t.Fatalf("%d invokes, want 3", n)
		}
		if lines := b.sink.Lines(req.RunID); !contains(lines, "working") {
			t.Fatalf("log %q", lines)
		}
	})

	t.Run("throttling that lasts fails the run after MaxAttempts", func(t *testing.T) {
		b := setupFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { apiError(w, 429, "TooManyRequestsException") }, nil)
		out := b.run(t, request("lambda://us-east-1/fn"))
		if out.State != kind.RunFailed || !strings.Contains(out.Message, "(3 attempt(s))") || !strings.Contains(out.Message, "TooManyRequestsException") {
			t.Fatalf("outcome %+v", out)
		}
	})

	t.Run("a 5xx is retried", func(t *testing.T) {
		b := setupFake(t, func(n int, w http.ResponseWriter, _ *http.Request) {
			if n == 1 {
				apiError(w, 500, "ServiceException")
				return
			}
			answer(w, `"ok"`, "")
		}, nil)
		if out := b.run(t, request("lambda://us-east-1/fn")); out.State != kind.RunSucceeded {
			t.Fatalf("outcome %+v", out)
		}
	})

	t.Run("a 4xx is not retried", func(t *testing.T) {
		b := setupFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
			apiError(w, 400, "InvalidRequestContentException")
		}, nil)
		out := b.run(t, request("lambda://us-east-1/fn"))
		if n, _ := b.f.counts(); out.State != kind.RunFailed || n != 1 {
			t.Fatalf("outcome %+v after %d invokes", out, n)
		}
	})

	t.Run("Event mode retries within the dispatch and then refuses", func(t *testing.T) {
		b := setupFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { apiError(w, 429, "TooManyRequestsException") }, func(cfg *lambda.Config) {
			cfg.CallbackURL, cfg.RunToken = "http://127.0.0.1:1/api/callback", runToken
		})
		req := request("lambda://us-east-1/fn?mode=event")
		_, err := b.d.Run(b.ctx, req)
		if err == nil || !strings.Contains(err.Error(), "(3 attempt(s))") {
			t.Fatalf("Run: %v", err)
		}
		if n := b.sink.Completions(req.RunID); n != 0 {
			t.Fatalf("a refused run was completed %d time(s)", n)
		}
		if err := b.d.IdleBeat(b.ctx, req.Target, req.JobID); err != nil {
			t.Fatalf("IdleBeat after a refused dispatch: %v", err)
		}
	})

	t.Run("an unknown function is ErrUnknownTarget in both modes", func(t *testing.T) {
		b := setupFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { apiError(w, 404, "ResourceNotFoundException") }, func(cfg *lambda.Config) {
			cfg.CallbackURL, cfg.RunToken = "http://127.0.0.1:1/api/callback", runToken
		})
		b.f.setGet(func(w http.ResponseWriter, _ *http.Request) { apiError(w, 404, "ResourceNotFoundException") })
		for _, target := range []string{"lambda://us-east-1/fn", "lambda://us-east-1/fn?mode=event"} {
			if _, err := b.d.Run(b.ctx, request(target)); !errors.Is(err, targets.ErrUnknownTarget) {
				t.Fatalf("Run(%s): %v", target, err)
			}
		}
		if n, gets := b.f.counts(); n != 1 || gets != 1 {
			t.Fatalf("%d invokes and %d GetFunction calls; want the sync run to stop at GetFunction", n, gets)
		}
	})

	t.Run("a refused connection is retried", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		sink := targettest.NewMemorySink()
		d := newDriver(t, &backend{endpoint: "http://" + addr}, sink, func(cfg *lambda.Config) {
			cfg.MaxAttempts, cfg.BackoffBase, cfg.BackoffMax = 2, time.Millisecond, time.Millisecond
			cfg.CallbackURL, cfg.RunToken = "http://127.0.0.1:1/api/callback", runToken
		})
		_, err = d.Run(context.Background(), request("lambda://us-east-1/fn?mode=event"))
		if err == nil || !strings.Contains(err.Error(), "(2 attempt(s))") {
			t.Fatalf("Run: %v", err)
		}
	})
}

func TestSyncInvokes(t *testing.T) {
	t.Run("GetFunction refused does not stop the invoke", func(t *testing.T) {
		b := setupFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answer(w, `"ok"`, "") }, nil)
		b.f.setGet(func(w http.ResponseWriter, _ *http.Request) { apiError(w, 403, "AccessDeniedException") })
		if out := b.run(t, request("lambda://us-east-1/fn")); out.State != kind.RunSucceeded {
			t.Fatalf("outcome %+v", out)
		}
	})

	t.Run("the payload is the documented trigger", func(t *testing.T) {
		b := setupFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answer(w, `"ok"`, "") }, nil)
		req := request("lambda://us-east-1/fn?qualifier=live")
		b.run(t, req)
		var tr jobfn.Trigger
		if err := json.Unmarshal(b.f.payload(0), &tr); err != nil {
			t.Fatal(err)
		}
		want := jobfn.Trigger{JobID: 7, RunID: req.RunID, Handler: "h", Params: `{"a":1}`, ShardIndex: 2, ShardTotal: 5, ScheduledAt: req.ScheduledAt, Attempt: 1}
		if tr != want {
			t.Fatalf("trigger %+v, want %+v (payload %s)", tr, want, b.f.payload(0))
		}
		h := b.f.header(0)
		if h.Get("X-Amz-Invocation-Type") != "RequestResponse" || h.Get("X-Amz-Log-Type") != "Tail" {
			t.Fatalf("headers %v", h)
		}
	})

	t.Run("a duplicate dispatch is ignored, Kill stops waiting, Close waits", func(t *testing.T) {
		release := make(chan struct{})
		b := setupFake(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			answer(w, `"late"`, "")
		}, nil)
		defer close(release)
		req := request("lambda://us-east-1/fn")
		if _, err := b.d.Run(b.ctx, req); err != nil {
			t.Fatal(err)
		}
		disp, err := b.d.Run(b.ctx, req)
		if err != nil || !strings.Contains(disp.Message, "already in flight") {
			t.Fatalf("second Run: %+v %v", disp, err)
		}
		if err := b.d.IdleBeat(b.ctx, req.Target, req.JobID); !errors.Is(err, targets.ErrBusy) {
			t.Fatalf("IdleBeat while invoking: %v", err)
		}
		if err := b.d.Kill(b.ctx, req.Target, req.RunID, req.JobID); err != nil {
			t.Fatal(err)
		}
		out := b.sink.WaitOutcome(t, req.RunID, runWait)
		if out.State != kind.RunKilled || out.Message != lambda.KilledMessage {
			t.Fatalf("outcome %+v", out)
		}
	})

	t.Run("MaxInFlight bounds the invokes", func(t *testing.T) {
		release := make(chan struct{})
		b := setupFake(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			answer(w, `"ok"`, "")
		}, func(cfg *lambda.Config) { cfg.MaxInFlight = 1 })
		first := request("lambda://us-east-1/fn")
		if _, err := b.d.Run(b.ctx, first); err != nil {
			t.Fatal(err)
		}
		if _, err := b.d.Run(b.ctx, request("lambda://us-east-1/fn")); !errors.Is(err, targets.ErrBusy) {
			t.Fatalf("Run over MaxInFlight: %v, want ErrBusy", err)
		}
		close(release)
		if out := b.sink.WaitOutcome(t, first.RunID, runWait); out.State != kind.RunSucceeded {
			t.Fatalf("outcome %+v", out)
		}
	})

	t.Run("Close abandons invokes once its context ends", func(t *testing.T) {
		b := setupFake(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}, nil)
		req := request("lambda://us-east-1/fn")
		if _, err := b.d.Run(b.ctx, req); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if err := b.d.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close: %v", err)
		}
		out, ok := b.sink.Outcome(req.RunID)
		if !ok || out.State != kind.RunFailed || !strings.Contains(out.Message, "shut down") {
			t.Fatalf("outcome %+v (%v) after Close", out, ok)
		}
		if _, err := b.d.Run(b.ctx, request("lambda://us-east-1/fn")); !errors.Is(err, lambda.ErrClosed) {
			t.Fatalf("Run after Close: %v", err)
		}
	})
}

func TestEventRuns(t *testing.T) {
	t.Run("the payload carries the callback and the run token", func(t *testing.T) {
		b := setupFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(202) }, func(cfg *lambda.Config) {
			cfg.Mode, cfg.CallbackURL, cfg.RunToken = lambda.ModeEvent, "https://ringjob.example/api/callback", runToken
		})
		req := request("lambda://us-east-1/fn")
		disp, err := b.d.Run(b.ctx, req)
		if err != nil || disp.Done != nil || !strings.Contains(disp.Message, "queued") {
			t.Fatalf("Run: %+v %v", disp, err)
		}
		var tr jobfn.Trigger
		if err := json.Unmarshal(b.f.payload(0), &tr); err != nil {
			t.Fatal(err)
		}
		if tr.CallbackURL != "https://ringjob.example/api/callback" || tr.CallbackToken != runToken(req.RunID) || b.f.header(0).Get("X-Amz-Invocation-Type") != "Event" {
			t.Fatalf("trigger %+v, headers %v", tr, b.f.header(0))
		}
		if _, ok := b.sink.Outcome(req.RunID); ok {
			t.Fatal("an Event run has an outcome before its callback")
		}
	})

	t.Run("a run without a callback times out after EventMaxAge", func(t *testing.T) {
		clock := clockwork.NewFakeClock()
		b := setupFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(202) }, func(cfg *lambda.Config) {
			cfg.Mode, cfg.CallbackURL, cfg.RunToken, cfg.Clock = lambda.ModeEvent, "https://ringjob.example/api/callback", runToken, clock
		})
		done, silent := request("lambda://us-east-1/fn"), request("lambda://us-east-1/fn")
		for _, req := range []targets.Request{done, silent} {
			if _, err := b.d.Run(b.ctx, req); err != nil {
				t.Fatal(err)
			}
		}
		// One reports through its callback (the server completes it).
		_ = b.sink.Complete(b.ctx, done.RunID, targets.Outcome{State: kind.RunSucceeded, Code: 200})
		if err := clock.BlockUntilContext(b.ctx, 1); err != nil {
			t.Fatal(err)
		}
		clock.Advance(lambda.DefaultEventMaxAge)
		out := b.sink.WaitOutcome(t, silent.RunID, runWait)
		if out.State != kind.RunTimedOut || !strings.Contains(out.Message, "no callback") {
			t.Fatalf("outcome %+v", out)
		}
		if n := b.sink.Completions(done.RunID); n != 1 {
			t.Fatalf("the run that reported was completed %d times", n)
		}
	})

	t.Run("Kill of a run this driver does not know marks it killed", func(t *testing.T) {
		b := setupFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(202) }, nil)
		if err := b.d.Kill(b.ctx, "lambda://us-east-1/fn", 99, 7); err != nil {
			t.Fatal(err)
		}
		if out, ok := b.sink.Outcome(99); !ok || out.State != kind.RunKilled {
			t.Fatalf("outcome %+v %v", out, ok)
		}
		if err := b.d.Kill(b.ctx, "lambda://us-east-1/fn", 99, 7); err != nil || b.sink.Completions(99) != 1 {
			t.Fatalf("second Kill: %v, %d completions", err, b.sink.Completions(99))
		}
	})
}

func TestBeatIsCached(t *testing.T) {
	clock := clockwork.NewFakeClock()
	b := setupFake(t, nil, func(cfg *lambda.Config) { cfg.Clock = clock })
	for range 3 {
		if err := b.d.Beat(b.ctx, "lambda://us-east-1/fn"); err != nil {
			t.Fatal(err)
		}
	}
	if _, gets := b.f.counts(); gets != 1 {
		t.Fatalf("%d GetFunction calls, want 1", gets)
	}
	clock.Advance(lambda.DefaultBeatTTL)
	b.f.setGet(func(w http.ResponseWriter, _ *http.Request) { apiError(w, 404, "ResourceNotFoundException") })
	if err := b.d.Beat(b.ctx, "lambda://us-east-1/fn"); !errors.Is(err, targets.ErrUnknownTarget) {
		t.Fatalf("Beat after the function was deleted: %v", err)
	}
	if err := b.d.Beat(b.ctx, "lambda://us-east-1/fn?mode=event"); !errors.Is(err, targets.ErrUnknownTarget) {
		t.Fatalf("Beat: %v", err)
	}
	if _, gets := b.f.counts(); gets != 2 {
		t.Fatalf("%d GetFunction calls, want 2 (the mode does not matter)", gets)
	}
	if err := b.d.ValidateTarget("lambda://us-east-1/fn?mode=event"); !errors.Is(err, lambda.ErrEventModeUnconfigured) {
		t.Fatalf("ValidateTarget of an Event target without a callback: %v", err)
	}
}
