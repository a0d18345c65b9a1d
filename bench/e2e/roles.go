package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/ringjob/ringjob/executor"
	"github.com/ringjob/ringjob/functions/jobfn"
)

// The target processes. The orchestrator starts its own binary again with
// -role; each role records what reached it (record.go) and stops on SIGTERM.

type roleOptions struct {
	admin  string // server base URL
	token  string // executor access token
	app    string // app name to register under
	listen string // 127.0.0.1:port
	rec    string // record file (or directory for functions)
	// noCalls makes the xxl-batch executor never call back (diagnostic).
	noCalls bool
}

// triggerBody is the part of XXL-JOB's TriggerParam the executors record.
type triggerBody struct {
	JobID       int64 `json:"jobId"`
	LogID       int64 `json:"logId"`
	LogDateTime int64 `json:"logDateTime"`
}

// callbackItem is XXL-JOB's HandleCallbackParam (2.x/3.x field names).
type callbackItem struct {
	LogID      int64  `json:"logId"`
	LogDateTim int64  `json:"logDateTim"`
	HandleCode int    `json:"handleCode"`
	HandleMsg  string `json:"handleMsg"`
}

type xxlReply struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
}

// runBatchExecutor is a minimal XXL-JOB executor that behaves like the Java
// core (xxl-job-core's EmbedServer and TriggerCallbackThread): /run answers
// at once and queues the result; one callback thread takes everything queued
// and posts it as one /api/callback request, waits for the answer (3 s
// timeout, as the Java AdminBizClient), and starts over. A failed batch is
// kept, like the Java core's retry files, and sent again every
// callbackRetryEvery (30 s, as the Java core).
func runBatchExecutor(ctx context.Context, o roleOptions) error {
	rec, err := newRecorder(o.rec)
	if err != nil {
		return err
	}
	defer rec.close()
	q := &resultQueue{wake: make(chan struct{}, 1)}
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		_, _ = w.Write([]byte(`{"code":200,"msg":null}`))
	}
	run := func(w http.ResponseWriter, r *http.Request) {
		now := time.Now().UnixNano()
		if r.Header.Get("XXL-JOB-ACCESS-TOKEN") != o.token {
			_, _ = w.Write([]byte(`{"code":500,"msg":"The access token is wrong."}`))
			return
		}
		var tb triggerBody
		if err := json.NewDecoder(r.Body).Decode(&tb); err != nil {
			_, _ = w.Write([]byte(`{"code":500,"msg":"bad trigger"}`))
			return
		}
		rec.add(record{Kind: kindArrival, A: tb.JobID, B: tb.LogDateTime, C: tb.LogID, D: now})
		if o.noCalls {
			ok(w)
			return
		}
		q.push(pendingResult{item: callbackItem{LogID: tb.LogID, LogDateTim: tb.LogDateTime, HandleCode: 200}, readyNs: time.Now().UnixNano()})
		ok(w)
	}
	mux.HandleFunc("/run", run)
	mux.HandleFunc("/trigger", run)
	for _, p := range []string{"/beat", "/idleBeat", "/kill"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) { ok(w) })
	}
	mux.HandleFunc("/log", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"code":200,"content":{"fromLineNum":1,"toLineNum":0,"logContent":"","isEnd":true}}`))
	})
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()

	client := &http.Client{Timeout: 3 * time.Second}
	address := "http://" + ln.Addr().String() + "/"
	if err := register(ctx, client, o, address); err != nil {
		return err
	}
	fmt.Println("ready")
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); registryLoop(ctx, client, o, address) }()
	go func() { defer wg.Done(); q.callbackLoop(ctx, client, o, rec) }()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	wg.Wait()
	return nil
}

const callbackRetryEvery = 30 * time.Second

type pendingResult struct {
	item    callbackItem
	readyNs int64
}

type resultQueue struct {
	mu    sync.Mutex
	items []pendingResult
	wake  chan struct{}
}

func (q *resultQueue) push(p ...pendingResult) {
	q.mu.Lock()
	q.items = append(q.items, p...)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *resultQueue) takeAll() []pendingResult {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.items
	q.items = nil
	return out
}

func (q *resultQueue) callbackLoop(ctx context.Context, client *http.Client, o roleOptions, rec *recorder) {
	var retryMu sync.Mutex
	var retry [][]pendingResult // failed batches, as the Java core's retry files
	send := func(batch []pendingResult) bool {
		items := make([]callbackItem, len(batch))
		for i, p := range batch {
			items[i] = p.item
		}
		body, _ := json.Marshal(items)
		sent := time.Now().UnixNano()
		err := post(ctx, client, o.admin+"/api/callback", o.token, body)
		done := time.Now().UnixNano()
		for _, p := range batch {
			if err != nil {
				rec.add(record{Kind: kindCallbackFail, A: p.item.LogID, B: sent, C: done})
			} else {
				rec.add(record{Kind: kindAck, A: p.item.LogID, B: p.readyNs, C: sent, D: done})
			}
		}
		return err == nil
	}
	go func() {
		t := time.NewTicker(callbackRetryEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			retryMu.Lock()
			batches := retry
			retry = nil
			retryMu.Unlock()
			for _, b := range batches {
				if !send(b) && ctx.Err() == nil {
					retryMu.Lock()
					retry = append(retry, b)
					retryMu.Unlock()
				}
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		}
		for {
			batch := q.takeAll()
			if len(batch) == 0 {
				break
			}
			if !send(batch) {
				retryMu.Lock()
				retry = append(retry, batch)
				retryMu.Unlock()
			}
		}
	}
}

// post sends an executor-API request and checks XXL-JOB's envelope.
func post(ctx context.Context, client *http.Client, url, token string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("XXL-JOB-ACCESS-TOKEN", token)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var rep xxlReply
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &rep) != nil || rep.Code != 200 {
		return fmt.Errorf("%s: HTTP %d %s", url, resp.StatusCode, truncate(string(b), 200))
	}
	return nil
}

func register(ctx context.Context, client *http.Client, o roleOptions, address string) error {
	body, _ := json.Marshal(map[string]string{"registryGroup": "EXECUTOR", "registryKey": o.app, "registryValue": address})
	return post(ctx, client, o.admin+"/api/registry", o.token, body)
}

func registryLoop(ctx context.Context, client *http.Client, o roleOptions, address string) {
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := register(ctx, client, o, address); err != nil && ctx.Err() == nil {
				fmt.Fprintln(os.Stderr, "registry:", err)
			}
		}
	}
}

// runSDKExecutor is an executor built on our SDK (package executor) with one
// handler, "noop", that succeeds at once. A wrapper records each /run as it
// arrives; a RoundTripper on the SDK's client records when the server
// acknowledges each callback item.
func runSDKExecutor(ctx context.Context, o roleOptions) error {
	rec, err := newRecorder(o.rec)
	if err != nil {
		return err
	}
	defer rec.close()
	dir, err := os.MkdirTemp("", "ringjob-e2e-sdk-logs-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	ready := &readyTimes{m: map[int64]int64{}}
	ackTap := &callbackTap{next: http.DefaultTransport, rec: rec, ready: ready}
	ex, err := executor.New(
		executor.WithAdminAddresses(o.admin),
		executor.WithAccessToken(o.token),
		executor.WithAppName(o.app),
		executor.WithAddress("http://"+ln.Addr().String()+"/"),
		executor.WithLogDir(dir),
		executor.WithHTTPClient(&http.Client{Transport: ackTap}),
		executor.WithCallbackRetryInterval(time.Second),
		executor.WithShutdownGrace(0),
	)
	if err != nil {
		return err
	}
	ex.Register("noop", func(ctx context.Context, job *executor.Job) error {
		ready.set(job.LogID, time.Now().UnixNano())
		return nil
	})
	inner := ex.Handler()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/run" || r.URL.Path == "/trigger" {
			now := time.Now().UnixNano()
			body, _ := io.ReadAll(r.Body)
			var tb triggerBody
			if json.Unmarshal(body, &tb) == nil {
				rec.add(record{Kind: kindArrival, A: tb.JobID, B: tb.LogDateTime, C: tb.LogID, D: now})
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		inner.ServeHTTP(w, r)
	})
	if err := ex.Start(ctx); err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	// The SDK registers at Start; say ready once the server knows us.
	if err := register(ctx, &http.Client{Timeout: 3 * time.Second}, o, ex.Address()); err != nil {
		return err
	}
	fmt.Println("ready")
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return ex.Stop(sctx)
}

type readyTimes struct {
	mu sync.Mutex
	m  map[int64]int64
}

func (r *readyTimes) set(id, ns int64) {
	r.mu.Lock()
	r.m[id] = ns
	r.mu.Unlock()
}

func (r *readyTimes) take(id int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	ns := r.m[id]
	delete(r.m, id)
	return ns
}

// callbackTap sees the SDK's calls to the server and records, for each
// callback item, when the request went out and when it was acknowledged.
type callbackTap struct {
	next  http.RoundTripper
	rec   *recorder
	ready *readyTimes
}

func (t *callbackTap) RoundTrip(req *http.Request) (*http.Response, error) {
	if filepath.Base(req.URL.Path) != "callback" || req.Body == nil {
		return t.next.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	var items []callbackItem
	if json.Unmarshal(body, &items) != nil {
		var wrapped struct {
			CallbackList []callbackItem `json:"callbackList"`
		}
		_ = json.Unmarshal(body, &wrapped)
		items = wrapped.CallbackList
	}
	sent := time.Now().UnixNano()
	resp, err := t.next.RoundTrip(req)
	done := time.Now().UnixNano()
	if err != nil {
		for _, it := range items {
			t.rec.add(record{Kind: kindCallbackFail, A: it.LogID, B: sent, C: done})
		}
		return resp, err
	}
	b, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	var rep xxlReply
	okAck := rerr == nil && resp.StatusCode == http.StatusOK && json.Unmarshal(b, &rep) == nil && rep.Code == 200
	for _, it := range items {
		if okAck {
			t.rec.add(record{Kind: kindAck, A: it.LogID, B: t.ready.take(it.LogID), C: sent, D: done})
		} else {
			t.rec.add(record{Kind: kindCallbackFail, A: it.LogID, B: sent, C: done})
		}
	}
	return resp, nil
}

// runFunction is the Lambda function (the orchestrator copies its own binary
// as the function's bootstrap): it records the trigger in a file of its own
// process under $LAMBDA_TASK_ROOT/records and succeeds.
func runFunction() {
	dir := filepath.Join(os.Getenv("LAMBDA_TASK_ROOT"), "records")
	path := filepath.Join(dir, "fn-"+strconv.Itoa(os.Getpid()))
	jobfn.Start(func(ctx context.Context, t jobfn.Trigger, log *jobfn.Logger) (any, error) {
		now := time.Now().UnixNano()
		if err := appendRecord(path, record{Kind: kindArrival, A: t.JobID, B: t.ScheduledAt.UnixMilli(), C: t.RunID, D: now}); err != nil {
			return nil, err
		}
		return nil, nil
	})
}

// runLocalCommand is the local:// command: it records its trigger from the
// environment the driver sets and exits 0.
func runLocalCommand(path string) error {
	now := time.Now().UnixNano()
	job, err1 := strconv.ParseInt(os.Getenv("RINGJOB_JOB_ID"), 10, 64)
	run, err2 := strconv.ParseInt(os.Getenv("RINGJOB_RUN_ID"), 10, 64)
	at, err3 := time.Parse(time.RFC3339Nano, os.Getenv("RINGJOB_SCHEDULED_AT"))
	if err := errors.Join(err1, err2, err3); err != nil {
		return fmt.Errorf("trigger environment: %w", err)
	}
	return appendRecord(path, record{Kind: kindArrival, A: job, B: at.UnixMilli(), C: run, D: now})
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
