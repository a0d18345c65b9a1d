// Command goexecutor is a test executor that behaves as the XXL-JOB Go
// client (xxl-job-executor-go v1.2.0) does where Ringjob must not be fooled,
// speaking the wire format with its own types (none of Ringjob's):
//
//   - a handler that returns after a kill is called back with code 200 and
//     whatever it returned, as the Go client does (task.Run calls back
//     SuccessCode when the handler function returns);
//   - a panicking handler is called back with 500 and "task panic:<value>";
//   - its log endpoint answers like the Java core: isEnd is always false.
//
// Handlers: "sleep" (params: a Go duration; returns "job killed" when its
// context is cancelled), "oom" (panics "child process was killed by the
// OOM killer"), "ok" (logs two lines and returns "done"). GET /debug/stats
// reports what the executor saw (runs per handler, kills, callbacks sent).
//
// It prints "listening http://HOST:PORT" on its first line of output.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

type runReq struct {
	JobID                 int64  `json:"jobId"`
	ExecutorHandler       string `json:"executorHandler"`
	ExecutorParams        string `json:"executorParams"`
	ExecutorBlockStrategy string `json:"executorBlockStrategy"`
	ExecutorTimeout       int64  `json:"executorTimeout"`
	LogID                 int64  `json:"logId"`
	LogDateTime           int64  `json:"logDateTime"`
	GlueType              string `json:"glueType"`
	BroadcastIndex        int64  `json:"broadcastIndex"`
	BroadcastTotal        int64  `json:"broadcastTotal"`
}

type killReq struct {
	JobID int64 `json:"jobId"`
}

type logReq struct {
	LogDateTim  int64 `json:"logDateTim"`
	LogID       int64 `json:"logId"`
	FromLineNum int   `json:"fromLineNum"`
}

type callbackItem struct {
	LogID         int64 `json:"logId"`
	LogDateTim    int64 `json:"logDateTim"`
	ExecuteResult struct {
		Code int64  `json:"code"`
		Msg  string `json:"msg"`
	} `json:"executeResult"`
	HandleCode int64  `json:"handleCode"`
	HandleMsg  string `json:"handleMsg"`
}

// seen is one /run the executor accepted.
type seen struct {
	LogID   int64  `json:"logId"`
	JobID   int64  `json:"jobId"`
	Handler string `json:"handler"`
}

type executor struct {
	admins []string
	token  string

	mu      sync.Mutex
	running map[int64]context.CancelFunc // by job id, as the Go client keys its run list
	logs    map[int64][]string
	stats   stats
}

type stats struct {
	Runs      map[string]int `json:"runs"`
	Seen      []seen         `json:"seen"` // every /run, in order
	Kills     int            `json:"kills"`
	Callbacks []callbackItem `json:"callbacks"`
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	admin := flag.String("admin", "", "Ringjob server base URLs, comma-separated: callbacks go to the first that answers")
	token := flag.String("token", "", "executor access token")
	flag.Parse()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "goexecutor:", err)
		os.Exit(1)
	}
	var admins []string
	for _, a := range strings.Split(*admin, ",") {
		admins = append(admins, strings.TrimRight(strings.TrimSpace(a), "/"))
	}
	e := &executor{admins: admins, token: *token, running: map[int64]context.CancelFunc{},
		logs: map[int64][]string{}, stats: stats{Runs: map[string]int{}}}
	fmt.Printf("listening http://%s\n", ln.Addr())
	mux := http.NewServeMux()
	mux.HandleFunc("/run", e.run)
	mux.HandleFunc("/kill", e.kill)
	mux.HandleFunc("/log", e.log)
	mux.HandleFunc("/beat", func(w http.ResponseWriter, _ *http.Request) { reply(w, 200, "") })
	mux.HandleFunc("/idleBeat", func(w http.ResponseWriter, _ *http.Request) { reply(w, 200, "") })
	mux.HandleFunc("/debug/stats", func(w http.ResponseWriter, _ *http.Request) {
		e.mu.Lock()
		defer e.mu.Unlock()
		_ = json.NewEncoder(w).Encode(e.stats)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "goexecutor:", err)
		os.Exit(1)
	}
}

func reply(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "msg": msg})
}

func (e *executor) authorized(w http.ResponseWriter, r *http.Request) bool {
	if e.token != "" && r.Header.Get("XXL-JOB-ACCESS-TOKEN") != e.token {
		reply(w, 500, "The access token is wrong.")
		return false
	}
	return true
}

func (e *executor) appendLog(id int64, line string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.logs[id] = append(e.logs[id], line)
}

func (e *executor) run(w http.ResponseWriter, r *http.Request) {
	if !e.authorized(w, r) {
		return
	}
	var req runReq
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		reply(w, 500, "params err")
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.mu.Lock()
	e.stats.Runs[req.ExecutorHandler]++
	e.stats.Seen = append(e.stats.Seen, seen{LogID: req.LogID, JobID: req.JobID, Handler: req.ExecutorHandler})
	e.running[req.JobID] = cancel
	e.mu.Unlock()
	go e.execute(ctx, req)
	reply(w, 200, "")
}

// execute runs a handler and calls back as the Go client's task.Run does.
func (e *executor) execute(ctx context.Context, req runReq) {
	code, msg := int64(200), ""
	func() {
		defer func() {
			if p := recover(); p != nil {
				code, msg = 500, fmt.Sprintf("task panic:%v", p)
			}
		}()
		msg = e.handle(ctx, req)
	}()
	e.mu.Lock()
	delete(e.running, req.JobID)
	e.mu.Unlock()
	e.callback(req, code, msg)
}

func (e *executor) handle(ctx context.Context, req runReq) string {
	switch req.ExecutorHandler {
	case "sleep":
		d, _ := time.ParseDuration(req.ExecutorParams)
		e.appendLog(req.LogID, "sleeping "+d.String())
		select {
		case <-ctx.Done():
			e.appendLog(req.LogID, "cancelled")
			return "job killed"
		case <-time.After(d):
			return "slept"
		}
	case "oom":
		e.appendLog(req.LogID, "allocating")
		panic("child process was killed by the OOM killer")
	default:
		e.appendLog(req.LogID, "line one")
		e.appendLog(req.LogID, "line two, params "+req.ExecutorParams)
		return "done"
	}
}

func (e *executor) callback(req runReq, code int64, msg string) {
	it := callbackItem{LogID: req.LogID, LogDateTim: req.LogDateTime, HandleCode: code, HandleMsg: msg}
	it.ExecuteResult.Code, it.ExecuteResult.Msg = code, msg
	body, _ := json.Marshal([]callbackItem{it})
	// The Go client tries once; this one retries a little, over every
	// admin, so that a test is not at the mercy of a busy machine or of a
	// replica being restarted.
	for attempt := 0; attempt < 50; attempt++ {
		admin := e.admins[attempt%len(e.admins)]
		hr, _ := http.NewRequest(http.MethodPost, admin+"/api/callback", bytes.NewReader(body))
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set("XXL-JOB-ACCESS-TOKEN", e.token)
		resp, err := http.DefaultClient.Do(hr)
		if err == nil {
			var out struct {
				Code int `json:"code"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			if out.Code == 200 {
				e.mu.Lock()
				e.stats.Callbacks = append(e.stats.Callbacks, it)
				e.mu.Unlock()
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (e *executor) kill(w http.ResponseWriter, r *http.Request) {
	if !e.authorized(w, r) {
		return
	}
	var req killReq
	_ = json.NewDecoder(r.Body).Decode(&req)
	e.mu.Lock()
	cancel, ok := e.running[req.JobID]
	if ok {
		e.stats.Kills++
	}
	e.mu.Unlock()
	if !ok {
		reply(w, 500, "job not running")
		return
	}
	cancel()
	reply(w, 200, "")
}

// log answers like the Java core: lines from fromLineNum, toLineNum the
// number of lines in the file, and isEnd always false.
func (e *executor) log(w http.ResponseWriter, r *http.Request) {
	if !e.authorized(w, r) {
		return
	}
	var req logReq
	_ = json.NewDecoder(r.Body).Decode(&req)
	e.mu.Lock()
	lines := e.logs[req.LogID]
	var sb strings.Builder
	for i := max(req.FromLineNum, 1); i <= len(lines); i++ {
		sb.WriteString(lines[i-1] + "\n")
	}
	to := len(lines)
	e.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"code": 200, "msg": nil, "content": map[string]any{
		"fromLineNum": req.FromLineNum, "toLineNum": to, "logContent": sb.String(), "isEnd": false}})
}
