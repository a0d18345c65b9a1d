package faults_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/xxlwire"
)

// arrival is one run the executor received.
type arrival struct {
	job, logID, scheduledMs int64
	at                      time.Time
}

// xxlExecutor speaks the XXL-JOB executor protocol on a socket and records
// every /run it receives; it reports each run succeeded through the admin
// callback of any replica that answers (retrying, as executors do), failed
// for the handler failHandler. It can
// go down (its port refuses connections) and come back on the same port.
// Like XXL-JOB's Java executor it keeps a log per run it received (/log
// answers "logFile not exists" for any other log id), says it is busy with
// a job (/idleBeat) while a /run of the job is being handled, and does not
// refuse a log id it ran before: a run sent twice runs twice.
type xxlExecutor struct {
	t      *testing.T
	port   int
	admins func() []string
	// runDelay is how long it takes to answer a /run (after recording its
	// arrival): a slow executor keeps a replica's trigger pool busy.
	runDelay time.Duration

	mu       sync.Mutex
	arrivals []arrival
	logs     map[int64]bool // log ids received
	running  map[int64]int  // /run requests being handled, by job
	srv      *http.Server
	pending  []xxlwire.CallbackItem
	retries  []retryBatch // failed callbacks, set aside like XXL-JOB's retry file
	closed   bool
	refused  int // callback items an admin answered with a failure (then retried)
	wake     chan struct{}
	done     chan struct{}
}

// retryBatch is a callback batch an admin did not take. Like XXL-JOB's
// executor (which writes it to a retry file and resends it later), it does
// not hold up the results behind it. A batch no admin could record (its
// database was down, no admin answered) is resent until one does, with a
// growing pause, as XXL-JOB's retry file is; a batch an admin answered
// by refusing some of its items had the others recorded, so it is given up
// after maxRefusedTries.
type retryBatch struct {
	items   []xxlwire.CallbackItem
	tries   int
	refused bool // the last answer refused items (the rest were recorded)
	next    time.Time
}

// failHandler is the handler whose runs the executor reports failed.
const failHandler = "fail"

const (
	maxRefusedTries = 10
	resendFirst     = 300 * time.Millisecond
	resendMax       = 5 * time.Second
)

// resendAfter is the pause before the next try of a batch tried n times.
func resendAfter(n int) time.Duration {
	d := resendFirst
	for i := 1; i < n && d < resendMax; i++ {
		d *= 2
	}
	return min(d, resendMax)
}

func startExecutor(t *testing.T, runDelay time.Duration) *xxlExecutor {
	t.Helper()
	e := &xxlExecutor{t: t, port: freePort(t), runDelay: runDelay, wake: make(chan struct{}, 1), done: make(chan struct{})}
	e.up()
	go e.callbacks()
	return e
}

func (e *xxlExecutor) url() string { return fmt.Sprintf("http://127.0.0.1:%d", e.port) }

// up starts serving on the executor's port.
func (e *xxlExecutor) up() {
	e.t.Helper()
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ { // the old socket may linger a moment
		if ln, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", e.port)); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(e.t, err)
	srv := &http.Server{Handler: e}
	e.mu.Lock()
	e.srv = srv
	e.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// down stops serving: connections are refused until up.
func (e *xxlExecutor) down() {
	e.mu.Lock()
	srv := e.srv
	e.srv = nil
	e.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

func (e *xxlExecutor) close() {
	e.down()
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		close(e.done)
	}
	e.mu.Unlock()
}

func (e *xxlExecutor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", xxlwire.ResponseContentType)
	if r.Header.Get(xxlwire.HeaderAccessToken) != execToken {
		fmt.Fprintf(w, `{"code":500,"msg":%q}`, xxlwire.MsgTokenWrong)
		return
	}
	switch r.URL.Path {
	case xxlwire.PathIdleBeat:
		var q xxlwire.JobIDRequest
		if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
			fmt.Fprintf(w, `{"code":500,"msg":%q}`, err.Error())
			return
		}
		e.mu.Lock()
		busy := e.running[q.JobID] > 0
		e.mu.Unlock()
		if busy {
			fmt.Fprint(w, `{"code":500,"msg":"job thread is running or has trigger queue."}`)
			return
		}
	case xxlwire.PathLog:
		var q xxlwire.LogRequest
		if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
			fmt.Fprintf(w, `{"code":500,"msg":%q}`, err.Error())
			return
		}
		e.mu.Lock()
		held := e.logs[q.LogID]
		e.mu.Unlock()
		res := xxlwire.LogResult{FromLineNum: q.FromLineNum, LogContent: "readLog fail, logFile not exists", IsEnd: true}
		if held {
			res = xxlwire.LogResult{FromLineNum: q.FromLineNum, ToLineNum: 1, LogContent: "recorded\n"}
		}
		env, _ := xxlwire.Reply(xxlwire.CodeSuccess, "", res)
		_ = json.NewEncoder(w).Encode(env)
		return
	case xxlwire.PathRun:
		var tr xxlwire.TriggerRequest
		if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
			fmt.Fprintf(w, `{"code":500,"msg":%q}`, err.Error())
			return
		}
		e.mu.Lock()
		if e.logs == nil {
			e.logs, e.running = map[int64]bool{}, map[int64]int{}
		}
		e.logs[tr.LogID] = true
		e.running[tr.JobID]++
		e.arrivals = append(e.arrivals, arrival{job: tr.JobID, logID: tr.LogID, scheduledMs: tr.LogDateTime, at: time.Now()})
		result := xxlwire.NewCallbackItem(tr.LogID, tr.LogDateTime, xxlwire.CodeSuccess, "recorded")
		if tr.ExecutorHandler == failHandler {
			result = xxlwire.NewCallbackItem(tr.LogID, tr.LogDateTime, xxlwire.CodeFail, "failed as its handler does")
		}
		e.pending = append(e.pending, result)
		e.mu.Unlock()
		select {
		case e.wake <- struct{}{}:
		default:
		}
		time.Sleep(e.runDelay)
		e.mu.Lock()
		e.running[tr.JobID]--
		e.mu.Unlock()
	}
	fmt.Fprint(w, `{"code":200,"msg":null,"content":null}`)
}

// callbacks reports results in batches to whichever replica answers.
func (e *xxlExecutor) callbacks() {
	client := &http.Client{Timeout: 30 * time.Second}
	for {
		select {
		case <-e.done:
			return
		case <-e.wake:
		case <-time.After(200 * time.Millisecond):
		}
		// Up to 10 results per callback, as an executor's callback thread
		// sends what queued up meanwhile.
		e.resendDue(client)
		e.mu.Lock()
		n := min(len(e.pending), 10)
		batch := append([]xxlwire.CallbackItem(nil), e.pending[:n]...)
		e.pending = e.pending[n:]
		more := len(e.pending) > 0
		e.mu.Unlock()
		if more {
			select {
			case e.wake <- struct{}{}:
			default:
			}
		}
		if len(batch) == 0 {
			continue
		}
		if ok, refused := e.report(client, batch); !ok {
			e.mu.Lock()
			e.retries = append(e.retries, retryBatch{items: batch, tries: 1, refused: refused, next: time.Now().Add(resendAfter(1))})
			e.mu.Unlock()
		}
	}
}

// resendDue resends the set-aside batches whose time has come.
func (e *xxlExecutor) resendDue(client *http.Client) {
	now := time.Now()
	e.mu.Lock()
	var due []retryBatch
	kept := e.retries[:0]
	for _, b := range e.retries {
		if now.After(b.next) {
			due = append(due, b)
		} else {
			kept = append(kept, b)
		}
	}
	e.retries = kept
	e.mu.Unlock()
	for _, b := range due {
		ok, refused := e.report(client, b.items)
		if ok {
			continue
		}
		b.tries++
		b.refused = refused
		if refused && b.tries >= maxRefusedTries {
			continue // given up: the items the admin takes were recorded
		}
		b.next = time.Now().Add(resendAfter(b.tries))
		e.mu.Lock()
		e.retries = append(e.retries, b)
		e.mu.Unlock()
	}
}

// report sends a batch to one admin after another until one takes it
// (ok). refused tells that an admin answered by refusing some items, and so
// recorded the others.
func (e *xxlExecutor) report(client *http.Client, batch []xxlwire.CallbackItem) (ok, refused bool) {
	body, _ := json.Marshal(batch)
	admins := e.admins()
	first := rand.N(len(admins)) // spread over the replicas; a paused one only delays
	for i := range admins {
		admin := admins[(first+i)%len(admins)]
		req, _ := http.NewRequest("POST", admin+xxlwire.PathCallback, bytes.NewReader(body))
		req.Header.Set("Content-Type", xxlwire.RequestContentType)
		req.Header.Set(xxlwire.HeaderAccessToken, execToken)
		resp, err := client.Do(req)
		if err != nil {
			continue
		}
		var env xxlwire.Envelope
		derr := json.NewDecoder(resp.Body).Decode(&env)
		resp.Body.Close()
		if resp.StatusCode == 200 && derr == nil && env.Code == xxlwire.CodeSuccess {
			return true, false
		}
		if derr == nil && strings.HasPrefix(env.Msg, "Refused results") {
			refused = true
		}
		// Like XXL-JOB executors, a callback the admin did not take (it
		// could not reach its database) is retried.
		e.mu.Lock()
		e.refused += len(batch)
		e.mu.Unlock()
	}
	return false, refused
}

func (e *xxlExecutor) setAdmins(f func() []string) { e.admins = f }

func (e *xxlExecutor) all() []arrival {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]arrival(nil), e.arrivals...)
}

func (e *xxlExecutor) pendingCallbacks() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.pending) + len(e.retries)
}
