package lambdaemu

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Runtime API paths (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html).
const (
	runtimePrefix   = "/2018-06-01/runtime"
	maxResponseSize = 6 * 1024 * 1024
)

// process is one execution environment of a function: the bootstrap as a
// child process with a Runtime API listener of its own (aws-lambda-go reads
// only host:port from AWS_LAMBDA_RUNTIME_API, so every process needs its own
// port). It runs one invocation at a time.
type process struct {
	f       *function
	seq     int
	srv     *http.Server
	cmd     *exec.Cmd
	logFile *os.File // the process's stdout and stderr (O_APPEND)
	started time.Time

	ready     chan struct{} // closed at its first GET /next: init is done
	readyOnce sync.Once
	next      chan *invocation // handed to the runtime's GET /next
	exited    chan struct{}    // closed when the process has exited and been reaped
	exitErr   error            // how it exited; read after exited is closed
	dead      chan struct{}    // closed when the emulator kills it
	deadOnce  sync.Once
	tornOnce  sync.Once

	mu      sync.Mutex
	current *invocation // the invocation the runtime was handed
	initErr []byte      // what it posted to /runtime/init/error
}

// startProcess starts a new process of f with its Runtime API.
func startProcess(f *function, seq int) (*process, error) {
	e := f.e
	var lc net.ListenConfig
	ln, err := lc.Listen(e.ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("runtime API listener for %s: %w", f.cfg.Name, err)
	}
	logPath := filepath.Join(e.dir, fmt.Sprintf("%s-%d.log", f.cfg.Name, seq))
	logFile, err := os.OpenFile(logPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("log file for %s: %w", f.cfg.Name, err)
	}
	p := &process{
		f: f, seq: seq, logFile: logFile,
		ready: make(chan struct{}), next: make(chan *invocation), exited: make(chan struct{}), dead: make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+runtimePrefix+"/invocation/next", p.handleNext)
	mux.HandleFunc("POST "+runtimePrefix+"/invocation/{id}/response", p.handleResponse)
	mux.HandleFunc("POST "+runtimePrefix+"/invocation/{id}/error", p.handleError)
	mux.HandleFunc("POST "+runtimePrefix+"/init/error", p.handleInitError)
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	cmd := exec.Command(f.cfg.Path)
	cmd.Dir = filepath.Dir(f.cfg.Path)
	cmd.Env = p.environ(ln.Addr().String())
	cmd.Stdout, cmd.Stderr = logFile, logFile
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		_ = ln.Close()
		_ = logFile.Close()
		_ = os.Remove(logPath)
		return nil, fmt.Errorf("start %s (%s): %w", f.cfg.Name, f.cfg.Path, err)
	}
	p.cmd = cmd
	p.started = time.Now()
	e.wg.Add(2)
	go func() {
		defer e.wg.Done()
		_ = p.srv.Serve(ln) // closes ln when it returns
	}()
	go func() {
		defer e.wg.Done()
		p.exitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// environ is the environment Lambda gives a provided.al2023 function, plus
// Function.Env.
func (p *process) environ(runtimeAPI string) []string {
	f, region := p.f.cfg, p.f.e.opts.Region
	env := map[string]string{
		"AWS_LAMBDA_RUNTIME_API":          runtimeAPI,
		"AWS_LAMBDA_FUNCTION_NAME":        f.Name,
		"AWS_LAMBDA_FUNCTION_VERSION":     latest,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(f.MemorySize),
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/" + f.Name,
		"AWS_LAMBDA_LOG_STREAM_NAME":      time.Now().UTC().Format("2006/01/02") + "/[" + latest + "]" + randomHex(16),
		"AWS_LAMBDA_INITIALIZATION_TYPE":  "on-demand",
		"AWS_REGION":                      region,
		"AWS_DEFAULT_REGION":              region,
		"_HANDLER":                        "bootstrap",
		"LAMBDA_TASK_ROOT":                filepath.Dir(f.Path),
		"LAMBDA_RUNTIME_DIR":              filepath.Dir(f.Path),
		"LANG":                            "en_US.UTF-8",
		"TZ":                              ":UTC",
		"PATH":                            "/usr/local/bin:/usr/bin/:/bin:/opt/bin",
	}
	for k, v := range f.Env {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// kill ends the process (and its process group) at once.
func (p *process) kill() {
	p.deadOnce.Do(func() {
		close(p.dead)
		killProcess(p.cmd)
	})
}

// teardown kills the process, waits until it has been reaped, stops its
// Runtime API and removes its log file. Safe to call more than once.
func (p *process) teardown() {
	p.tornOnce.Do(func() {
		p.kill()
		<-p.exited
		killGroup(p.cmd) // whatever it left behind in its group
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := p.srv.Shutdown(ctx); err != nil {
			_ = p.srv.Close()
		}
		cancel()
		_ = p.logFile.Close()
		_ = os.Remove(p.logFile.Name())
	})
}

// resetLog empties the log file at the start of an invocation; the process
// writes with O_APPEND, so its next write lands at the start.
func (p *process) resetLog() { _ = p.logFile.Truncate(0) }

// logTail returns the last max bytes of what the process wrote since resetLog.
func (p *process) logTail(max int) []byte {
	st, err := p.logFile.Stat()
	if err != nil {
		return nil
	}
	off := st.Size() - int64(max)
	if off < 0 {
		off = 0
	}
	buf := make([]byte, st.Size()-off)
	n, _ := p.logFile.ReadAt(buf, off)
	return buf[:n]
}

func (p *process) setCurrent(inv *invocation) {
	p.mu.Lock()
	p.current = inv
	p.mu.Unlock()
}

// invocation returns the current invocation if it has the request id.
func (p *process) invocation(id string) *invocation {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.current != nil && p.current.id == id {
		return p.current
	}
	return nil
}

func (p *process) handleNext(w http.ResponseWriter, r *http.Request) {
	p.readyOnce.Do(func() { close(p.ready) })
	select {
	case inv := <-p.next:
		h := w.Header()
		h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
		h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(inv.deadline.UnixMilli(), 10))
		h.Set("Lambda-Runtime-Invoked-Function-Arn", inv.arn)
		h.Set("Lambda-Runtime-Trace-Id", inv.traceID)
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(inv.payload)
	case <-p.dead:
		runtimeError(w, http.StatusInternalServerError, "Runtime.Killed", "the execution environment is shutting down")
	case <-r.Context().Done():
	}
}

// readResult reads a /response or /error body, with the error the runtime
// may put in trailers while streaming.
func readResult(r *http.Request) (body []byte, trailerType string, err error) {
	body, err = io.ReadAll(io.LimitReader(r.Body, maxResponseSize+1))
	if err != nil {
		return nil, "", err
	}
	if t := r.Trailer.Get("Lambda-Runtime-Function-Error-Type"); t != "" {
		if b, derr := base64.StdEncoding.DecodeString(r.Trailer.Get("Lambda-Runtime-Function-Error-Body")); derr == nil && len(b) > 0 {
			return b, t, nil
		}
		return errorPayload(t, "the function's response stream failed"), t, nil
	}
	return body, "", nil
}

func (p *process) handleResponse(w http.ResponseWriter, r *http.Request) {
	inv := p.invocation(r.PathValue("id"))
	if inv == nil {
		runtimeError(w, http.StatusBadRequest, "InvalidRequestID", "Invalid request ID")
		return
	}
	body, trailerType, err := readResult(r)
	switch {
	case err != nil:
		runtimeError(w, http.StatusBadRequest, "InvalidRequest", err.Error())
		return
	case trailerType != "":
		inv.finish(result{payload: body, functionError: "Unhandled"})
	case len(body) > maxResponseSize:
		inv.finish(result{functionError: "Unhandled", payload: errorPayload("Function.ResponseSizeTooLarge",
			fmt.Sprintf("Response payload size exceeded maximum allowed payload size (%d bytes).", maxResponseSize))})
		runtimeError(w, http.StatusRequestEntityTooLarge, "Function.ResponseSizeTooLarge", "response payload too large")
		return
	default:
		inv.finish(result{payload: body})
	}
	accepted(w)
}

func (p *process) handleError(w http.ResponseWriter, r *http.Request) {
	inv := p.invocation(r.PathValue("id"))
	if inv == nil {
		runtimeError(w, http.StatusBadRequest, "InvalidRequestID", "Invalid request ID")
		return
	}
	body, _, err := readResult(r)
	if err != nil {
		runtimeError(w, http.StatusBadRequest, "InvalidRequest", err.Error())
		return
	}
	if len(body) == 0 || len(body) > maxResponseSize {
		body = errorPayload(r.Header.Get("Lambda-Runtime-Function-Error-Type"), "the function reported an error")
	}
	inv.finish(result{payload: body, functionError: "Unhandled"})
	accepted(w)
}

func (p *process) handleInitError(w http.ResponseWriter, r *http.Request) {
	body, _, err := readResult(r)
	if err != nil {
		runtimeError(w, http.StatusBadRequest, "InvalidRequest", err.Error())
		return
	}
	if len(body) == 0 || len(body) > maxResponseSize {
		body = errorPayload(r.Header.Get("Lambda-Runtime-Function-Error-Type"), "the function failed to initialize")
	}
	p.mu.Lock()
	p.initErr = body
	p.mu.Unlock()
	accepted(w)
}

func (p *process) initError() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.initErr
}

func accepted(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"status":"OK"}`))
}

func runtimeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(errorPayload(typ, msg))
}
