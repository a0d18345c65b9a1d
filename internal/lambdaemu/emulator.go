package lambdaemu

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/logs"
)

// Record describes one finished invocation (see Options.OnInvoke).
type Record struct {
	Function      string
	Qualifier     string
	RequestID     string
	Type          string // RequestResponse or Event
	Payload       []byte // what the caller sent
	Response      []byte // the function's response, or the error payload
	FunctionError string // "" or "Unhandled"
	Log           string // the invocation's log, at most its last 4 KB
	Cold          bool   // a new process was started for it
	Duration      time.Duration
}

// Emulator serves the Lambda Invoke API for a set of functions and runs each
// function's processes behind their own Runtime API. Build it with New,
// start it with Start and stop it with Close.
type Emulator struct {
	opts  Options
	log   *logrus.Entry
	funcs map[string]*function

	mu      sync.Mutex
	started bool
	closed  bool
	ln      net.Listener
	srv     *http.Server
	dir     string // per-process log files
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup // serve loop, event pumps and event invocations, process waiters and runtime servers
}

// New validates opts and returns an emulator; nothing runs until Start.
func New(opts Options) (*Emulator, error) {
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	log := opts.Log
	log = logs.OrDiscard(log)
	e := &Emulator{opts: opts, log: log.WithField("service", "lambdaemu"), funcs: map[string]*function{}}
	for _, f := range opts.Functions {
		e.funcs[f.Name] = newFunction(e, f)
	}
	return e, nil
}

// Start listens on Options.Addr and starts serving; it returns at once.
func (e *Emulator) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	if e.started {
		return errors.New("lambdaemu: already started")
	}
	dir, err := os.MkdirTemp("", "ringjob-lambdaemu-*")
	if err != nil {
		return fmt.Errorf("lambdaemu: create the log directory: %w", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", e.opts.Addr)
	if err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("lambdaemu: listen on %s: %w", e.opts.Addr, err)
	}
	e.dir, e.ln = dir, ln
	e.ctx, e.cancel = context.WithCancel(context.WithoutCancel(ctx))
	e.srv = &http.Server{Handler: e.routes(), ReadHeaderTimeout: 10 * time.Second}
	e.started = true
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		if err := e.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.log.WithError(err).Error("invoke API server stopped")
		}
	}()
	for _, f := range e.funcs {
		f.startPump()
	}
	e.log.WithFields(logrus.Fields{"url": e.URL(), "functions": len(e.funcs)}).Info("lambda emulator started")
	return nil
}

// URL is the Invoke API's base URL (http://127.0.0.1:PORT), the endpoint to
// give an AWS SDK client. It is empty before Start.
func (e *Emulator) URL() string {
	if e.ln == nil {
		return ""
	}
	return "http://" + e.ln.Addr().String()
}

// Region is the region the emulator reports.
func (e *Emulator) Region() string { return e.opts.Region }

// FunctionARN returns the ARN of a function as the emulator names it.
func (e *Emulator) FunctionARN(name string) string {
	return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", e.opts.Region, AccountID, name)
}

// Close stops serving, kills every function process, and waits until every
// goroutine of the emulator has ended (or ctx ends, whose error it returns
// while the rest ends in the background). In-flight invocations end with a
// ServiceException. Close is safe to call more than once.
func (e *Emulator) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	started := e.started
	e.mu.Unlock()
	if !started {
		return nil
	}
	e.cancel()
	for _, f := range e.funcs {
		f.close()
	}
	var errs []error
	if err := e.srv.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("lambdaemu: shut the invoke API down: %w", err))
		_ = e.srv.Close()
	}
	done := make(chan struct{})
	go func() {
		e.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		for _, f := range e.funcs {
			f.teardownAll()
		}
		if err := os.RemoveAll(e.dir); err != nil {
			errs = append(errs, fmt.Errorf("lambdaemu: remove %s: %w", e.dir, err))
		}
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("lambdaemu: close: processes still ending: %w", ctx.Err()))
	}
	return errors.Join(errs...)
}

func (e *Emulator) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

func (e *Emulator) record(r Record) {
	e.log.WithFields(logrus.Fields{
		"function": r.Function, "request_id": r.RequestID, "type": r.Type, "function_error": r.FunctionError,
		"cold": r.Cold, "duration_ms": r.Duration.Milliseconds(),
	}).Debug("invocation ended\n" + r.Log)
	if e.opts.OnInvoke != nil {
		e.opts.OnInvoke(r)
	}
}
