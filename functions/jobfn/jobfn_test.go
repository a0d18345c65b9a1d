package jobfn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ringjob/ringjob/functions/jobfn"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// callbackServer records callbacks and answers with the given XXL-JOB codes
// in turn (the last one repeats).
type callbackServer struct {
	*httptest.Server
	mu     sync.Mutex
	got    []jobfn.Callback
	tokens []string
	codes  []int
	calls  atomic.Int32
}

func newCallbackServer(t *testing.T, codes ...int) *callbackServer {
	s := &callbackServer{codes: codes}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(s.calls.Add(1)) - 1
		var cb jobfn.Callback
		if err := json.NewDecoder(r.Body).Decode(&cb); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		s.mu.Lock()
		s.got = append(s.got, cb)
		s.tokens = append(s.tokens, r.Header.Get(jobfn.RunTokenHeader))
		s.mu.Unlock()
		code := s.codes[min(n, len(s.codes)-1)]
		if code == 0 {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "msg": "msg"})
	}))
	t.Cleanup(s.Close)
	return s
}

// seen returns the callbacks and tokens received so far.
func (s *callbackServer) seen() ([]jobfn.Callback, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]jobfn.Callback(nil), s.got...), append([]string(nil), s.tokens...)
}

func TestSyncMode(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	h := jobfn.Handler(func(_ context.Context, tr jobfn.Trigger, log *jobfn.Logger) (any, error) {
		log.Printf("run %d shard %d/%d", tr.RunID, tr.ShardIndex, tr.ShardTotal)
		log.Println("two", "words")
		if tr.Params == "fail" {
			return nil, errors.New("no luck")
		}
		return map[string]int{"n": 1}, nil
	}, jobfn.WithOutput(&out))

	resp, err := h(context.Background(), jobfn.Trigger{RunID: 9, ShardIndex: 1, ShardTotal: 2})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(resp)
	if string(b) != `{"ok":true,"result":{"n":1},"log":["run 9 shard 1/2","two words"]}` {
		t.Fatalf("response %s", b)
	}
	if out.String() != "run 9 shard 1/2\ntwo words\n" {
		t.Fatalf("stdout %q", out.String())
	}
	if _, err := h(context.Background(), jobfn.Trigger{Params: "fail"}); err == nil || err.Error() != "no luck" {
		t.Fatalf("error %v, want the handler's", err)
	}
}

func TestEventMode(t *testing.T) {
	t.Parallel()
	fast := jobfn.WithCallbackRetries(3, time.Millisecond)
	at := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)

	t.Run("success is called back with the run token", func(t *testing.T) {
		t.Parallel()
		s := newCallbackServer(t, 200)
		h := jobfn.Handler(func(_ context.Context, _ jobfn.Trigger, log *jobfn.Logger) (any, error) {
			log.Println("working")
			return "done", nil
		}, jobfn.WithOutput(&bytes.Buffer{}), fast)
		resp, err := h(context.Background(), jobfn.Trigger{RunID: 5, ScheduledAt: at, CallbackURL: s.URL, CallbackToken: "rjr_t"})
		if err != nil || !resp.OK {
			t.Fatalf("resp %+v, %v", resp, err)
		}
		got, tokens := s.seen()
		if len(got) != 1 || tokens[0] != "rjr_t" {
			t.Fatalf("callbacks %+v tokens %q", got, tokens)
		}
		item := got[0].CallbackList[0]
		if item.LogID != 5 || item.LogDateTime != at.UnixMilli() || item.HandleCode != 200 || item.HandleMsg != `"done"` || item.Log[0] != "working" {
			t.Fatalf("item %+v", item)
		}
	})

	t.Run("failure and panic are called back as 500 and never returned to Lambda", func(t *testing.T) {
		t.Parallel()
		s := newCallbackServer(t, 200)
		h := jobfn.Handler(func(_ context.Context, tr jobfn.Trigger, _ *jobfn.Logger) (any, error) {
			if tr.Params == "panic" {
				panic("oh no")
			}
			return nil, errors.New("broken")
		}, jobfn.WithOutput(&bytes.Buffer{}), fast)
		for _, params := range []string{"error", "panic"} {
			resp, err := h(context.Background(), jobfn.Trigger{RunID: 6, Params: params, CallbackURL: s.URL})
			if err != nil || resp.OK || resp.Error == "" {
				t.Fatalf("%s: resp %+v, %v; want a nil error (no Lambda retry) and ok false", params, resp, err)
			}
		}
		got, _ := s.seen()
		if msgs := []string{got[0].CallbackList[0].HandleMsg, got[1].CallbackList[0].HandleMsg}; msgs[0] != "broken" || msgs[1] != "panic: oh no" {
			t.Fatalf("handle messages %q", msgs)
		}
		if got[0].CallbackList[0].HandleCode != 500 || got[1].CallbackList[0].HandleCode != 500 {
			t.Fatalf("handle codes %+v", got)
		}
	})

	t.Run("callbacks are retried", func(t *testing.T) {
		t.Parallel()
		s := newCallbackServer(t, 0, 500, 200)
		h := jobfn.Handler(func(context.Context, jobfn.Trigger, *jobfn.Logger) (any, error) { return nil, nil }, jobfn.WithOutput(&bytes.Buffer{}), fast)
		if _, err := h(context.Background(), jobfn.Trigger{RunID: 7, CallbackURL: s.URL}); err != nil {
			t.Fatal(err)
		}
		if n := s.calls.Load(); n != 3 {
			t.Fatalf("%d calls, want 3 (502, code 500, then 200)", n)
		}
	})

	t.Run("a callback that keeps failing is logged", func(t *testing.T) {
		t.Parallel()
		s := newCallbackServer(t, 500)
		var out bytes.Buffer
		h := jobfn.Handler(func(context.Context, jobfn.Trigger, *jobfn.Logger) (any, error) { return nil, nil }, jobfn.WithOutput(&out), fast)
		_, err := h(context.Background(), jobfn.Trigger{RunID: 8, CallbackURL: s.URL})
		if err != nil || s.calls.Load() != 3 {
			t.Fatalf("err %v after %d calls", err, s.calls.Load())
		}
		if !strings.Contains(out.String(), "jobfn: could not report run 8") || !strings.Contains(out.String(), "3 attempt(s)") {
			t.Fatalf("stdout %q", out.String())
		}
	})
}

func TestShardCoversTheRangeOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ from, to int64 }{{0, 1000}, {5, 6}, {0, 0}, {-10, 7}, {0, 3}} {
		for total := 1; total <= 25; total++ {
			next := tc.from
			for i := 0; i < total; i++ {
				lo, hi := jobfn.Trigger{ShardIndex: i, ShardTotal: total}.Shard(tc.from, tc.to)
				if lo != next || hi < lo || hi-lo > (tc.to-tc.from)/int64(total)+1 {
					t.Fatalf("[%d,%d) shard %d/%d = [%d,%d), want it to start at %d", tc.from, tc.to, i, total, lo, hi, next)
				}
				next = hi
			}
			if next != tc.to {
				t.Fatalf("[%d,%d) over %d shards ends at %d", tc.from, tc.to, total, next)
			}
		}
	}
}

func TestDecodeParams(t *testing.T) {
	t.Parallel()
	var p struct{ From int }
	if err := (jobfn.Trigger{Params: `{"from":3}`}).DecodeParams(&p); err != nil || p.From != 3 {
		t.Fatalf("%+v %v", p, err)
	}
	if err := (jobfn.Trigger{RunID: 4, Params: `nope`}).DecodeParams(&p); err == nil || !strings.Contains(err.Error(), "run 4") {
		t.Fatalf("err %v", err)
	}
	if err := (jobfn.Trigger{}).DecodeParams(&p); err != nil {
		t.Fatal(err)
	}
}

func TestTriggerJSON(t *testing.T) {
	t.Parallel()
	raw := `{"job_id":1,"run_id":2,"handler":"h","params":"p","shard_index":3,"shard_total":4,"scheduled_at":"2026-01-02T02:00:00.123Z","attempt":1,"callback_url":"http://x/api/callback","callback_token":"rjr_x"}`
	var tr jobfn.Trigger
	if err := json.Unmarshal([]byte(raw), &tr); err != nil {
		t.Fatal(err)
	}
	want := jobfn.Trigger{JobID: 1, RunID: 2, Handler: "h", Params: "p", ShardIndex: 3, ShardTotal: 4,
		ScheduledAt: time.Date(2026, 1, 2, 2, 0, 0, 123e6, time.UTC), Attempt: 1, CallbackURL: "http://x/api/callback", CallbackToken: "rjr_x"}
	if tr != want || !tr.Async() {
		t.Fatalf("decoded %+v, want %+v", tr, want)
	}
}

func TestLogCap(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	h := jobfn.Handler(func(_ context.Context, _ jobfn.Trigger, log *jobfn.Logger) (any, error) {
		for i := 0; i < 5; i++ {
			log.Printf("line %d", i)
		}
		return nil, nil
	}, jobfn.WithOutput(&out), jobfn.WithLogCap(3, 1000))
	resp, _ := h(context.Background(), jobfn.Trigger{})
	if len(resp.Log) != 4 || !strings.Contains(resp.Log[3], "2 more line(s)") || strings.Count(out.String(), "\n") != 5 {
		t.Fatalf("log %q, stdout %q", resp.Log, out.String())
	}
}
