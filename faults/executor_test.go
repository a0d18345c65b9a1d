package faults_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ringjob/ringjob/internal/xxlwire"
	"github.com/stretchr/testify/require"
)

// arrival is one run the executor received.
type arrival struct {
	job, logID, scheduledMs int64
	at                      time.Time
}

// xxlExecutor speaks the XXL-JOB executor protocol on a socket and records
// every /run it receives; it reports each run succeeded through the admin
// callback of any replica that answers (retrying, as executors do). It can
// go down (its port refuses connections) and come back on the same port.
type xxlExecutor struct {
	t      *testing.T
	port   int
	admins func() []string

	mu       sync.Mutex
	arrivals []arrival
	srv      *http.Server
	pending  []xxlwire.CallbackItem
	closed   bool
	refused  int // callback items an admin answered with a failure (then retried)
	wake     chan struct{}
	done     chan struct{}
}

func startExecutor(t *testing.T) *xxlExecutor {
	t.Helper()
	e := &xxlExecutor{t: t, port: freePort(t), wake: make(chan struct{}, 1), done: make(chan struct{})}
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
	if r.URL.Path == xxlwire.PathRun {
		var tr xxlwire.TriggerRequest
		if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
			fmt.Fprintf(w, `{"code":500,"msg":%q}`, err.Error())
			return
		}
		e.mu.Lock()
		e.arrivals = append(e.arrivals, arrival{job: tr.JobID, logID: tr.LogID, scheduledMs: tr.LogDateTime, at: time.Now()})
		e.pending = append(e.pending, xxlwire.NewCallbackItem(tr.LogID, tr.LogDateTime, xxlwire.CodeSuccess, "recorded"))
		e.mu.Unlock()
		select {
		case e.wake <- struct{}{}:
		default:
		}
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
		if !e.report(client, batch) {
			e.mu.Lock()
			e.pending = append(batch, e.pending...)
			e.mu.Unlock()
			time.Sleep(300 * time.Millisecond)
		}
	}
}

func (e *xxlExecutor) report(client *http.Client, batch []xxlwire.CallbackItem) bool {
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
			return true
		}
		// Like XXL-JOB executors, a callback the admin did not take (it
		// could not reach its database) is retried.
		e.mu.Lock()
		e.refused += len(batch)
		e.mu.Unlock()
	}
	return false
}

func (e *xxlExecutor) all() []arrival {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]arrival(nil), e.arrivals...)
}

func (e *xxlExecutor) pendingCallbacks() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.pending)
}
