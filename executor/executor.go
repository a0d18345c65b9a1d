package executor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/ringjob/ringjob/internal/lifecycle"
	"github.com/ringjob/ringjob/internal/xxlwire"
)

// Executor is an XXL-JOB compatible HTTP executor. Build it with New,
// register handlers, mount Handler in a router (or use ListenAndServe), and
// run Start / Stop around it. It is safe for concurrent use.
type Executor struct {
	cfg       config
	client    *http.Client
	ownClient bool
	handler   http.Handler
	callbacks *callbackQueue
	regBody   []byte // set by Start

	hmu      sync.RWMutex
	handlers map[string]registration
	gen      uint64

	mu        sync.Mutex
	workers   map[int64]*worker // by job id
	active    map[int64]*run    // queued or running runs, by log id
	seen      logIDSet
	stopping  bool
	changed   chan struct{} // closed and replaced on every worker state change
	workerWG  sync.WaitGroup
	handlerWG sync.WaitGroup

	life                               sync.Mutex
	started, stopped                   bool
	registry, sender, retrier, janitor lifecycle.Loop
}

type registration struct {
	h   Handler
	gen uint64
}

// New builds an executor. WithAdminAddresses, WithAppName and
// WithAccessToken (or WithoutAccessToken) are required; the error names the
// option that is missing or wrong.
func New(opts ...Option) (*Executor, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.build(); err != nil {
		return nil, err
	}
	e := &Executor{
		cfg:       cfg,
		client:    cfg.client,
		callbacks: newCallbackQueue(),
		handlers:  make(map[string]registration),
		workers:   make(map[int64]*worker),
		active:    make(map[int64]*run),
		changed:   make(chan struct{}),
	}
	if e.client == nil {
		e.client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		e.ownClient = true
	}
	e.handler = http.HandlerFunc(e.serveHTTP)
	return e, nil
}

// Register makes h run the triggers whose executorHandler is name (the
// JobHandler of a BEAN job). Registering a name again replaces the handler;
// the job workers of the old one end once their current run is done. It
// panics on an empty name or a nil handler.
func (e *Executor) Register(name string, h Handler) {
	if name == "" || h == nil {
		panic("executor: Register needs a non-empty name and a non-nil handler")
	}
	e.hmu.Lock()
	defer e.hmu.Unlock()
	e.gen++
	e.handlers[name] = registration{h: h, gen: e.gen}
}

func (e *Executor) lookup(name string) (Handler, uint64, bool) {
	e.hmu.RLock()
	defer e.hmu.RUnlock()
	r, ok := e.handlers[name]
	return r.h, r.gen, ok
}

// Handler returns the executor's HTTP API: POST /run (and /trigger, its
// XXL-JOB 3.5 name), /beat, /idleBeat, /kill and /log at the root. Mount it
// at the root of a listener, or under a prefix with http.StripPrefix (and
// include the prefix in WithAddress). Triggers are accepted before Start, but
// their results are only sent once Start has run.
func (e *Executor) Handler() http.Handler { return e.handler }

// Address returns the URL the executor registers (registryValue), or "" if
// none is known yet.
func (e *Executor) Address() string {
	e.life.Lock()
	defer e.life.Unlock()
	return e.cfg.address
}

// Start starts the background services and returns at once: the registry
// heartbeat, the callback sender, the callback retry and the log retention.
// They end when ctx ends or Stop is called; call Stop in either case, for it
// removes the registration and reports what is left.
func (e *Executor) Start(ctx context.Context) error {
	e.life.Lock()
	defer e.life.Unlock()
	switch {
	case e.stopped:
		return ErrStopped
	case e.started:
		return ErrStarted
	case e.cfg.address == "":
		return ErrNoAddress
	}
	if err := os.MkdirAll(e.cfg.logDir, 0o700); err != nil {
		return fmt.Errorf("executor: create log directory (WithLogDir): %w", err)
	}
	e.started = true
	e.regBody = mustJSON(xxlwire.RegistryRequest{RegistryGroup: xxlwire.RegistryGroupExecutor, RegistryKey: e.cfg.appName, RegistryValue: e.cfg.address})
	e.registry.Start(ctx, e.registryLoop)
	e.sender.Start(ctx, e.senderLoop)
	e.retrier.Start(ctx, e.retryLoop)
	if e.cfg.retentionDays >= 3 {
		e.janitor.Start(ctx, e.retentionLoop)
	}
	return nil
}

// Stop shuts the executor down, in this order: it rejects new triggers, stops
// the heartbeat and sends registryRemove so the admin routes elsewhere; lets
// running and queued runs go on for the shutdown grace period (5 s); then
// cancels the handlers' contexts (cause ErrStopping) and reports those runs
// as killed and the queued ones as not executed; sends every pending
// callback (or writes it to a retry file); and waits for the handlers to
// return. If ctx ends first it returns an error naming what it gave up on.
// Stop is safe to call twice and without Start; the executor cannot be
// started again.
func (e *Executor) Stop(ctx context.Context) error {
	e.life.Lock()
	defer e.life.Unlock()
	if e.stopped {
		return nil
	}
	e.stopped = true
	e.mu.Lock()
	e.stopping = true
	e.mu.Unlock()

	e.registry.Stop()
	if e.started {
		e.unregister(ctx)
	}

	e.waitIdle(ctx, e.cfg.shutdownGrace)
	e.killAll(reasonStop, ErrStopping)
	e.workerWG.Wait() // killed workers end at once

	e.sender.Stop()
	e.retrier.Stop()
	e.janitor.Stop()
	e.flushCallbacks(ctx)

	err := e.waitHandlers(ctx)
	if e.ownClient {
		e.client.CloseIdleConnections()
	}
	return err
}

// waitIdle waits until no job runs or queues anything, for at most grace.
func (e *Executor) waitIdle(ctx context.Context, grace time.Duration) {
	if grace <= 0 {
		return
	}
	t := e.cfg.clock.NewTimer(grace)
	defer t.Stop()
	for {
		e.mu.Lock()
		idle, changed := e.allIdleLocked(), e.changed
		e.mu.Unlock()
		if idle {
			return
		}
		select {
		case <-changed:
		case <-t.Chan():
			return
		case <-ctx.Done():
			return
		}
	}
}

// waitHandlers waits for handler goroutines, which may ignore their
// cancelled contexts, until ctx ends.
func (e *Executor) waitHandlers(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		e.handlerWG.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("executor: stop: handlers still running after their contexts were cancelled: %w", ctx.Err())
	}
}

// ListenAndServe listens on addr (e.g. ":9999") and calls Serve.
func (e *Executor) ListenAndServe(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("executor: listen on %s: %w", addr, err)
	}
	return e.Serve(ctx, ln)
}

// Serve serves Handler on ln, with Start and Stop around it, until ctx ends;
// then it stops the executor and shuts the server down, allowing the shutdown
// grace period plus 30 s. Without WithAddress the executor registers
// http://{ip}:{port}/ of ln, where a wildcard listen address is replaced by
// the first non-loopback IPv4 address of the host. Do not call Start
// yourself when using Serve. It returns nil after a clean shutdown.
func (e *Executor) Serve(ctx context.Context, ln net.Listener) error {
	e.life.Lock()
	if e.cfg.address == "" && !e.started && !e.stopped {
		e.cfg.address = defaultAddress(ln.Addr())
	}
	e.life.Unlock()
	if err := e.Start(ctx); err != nil {
		_ = ln.Close()
		return err
	}
	srv := &http.Server{
		Handler:           e.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       90 * time.Second, // as the Java executor
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.shutdownGrace+30*time.Second)
	defer cancel()
	err := e.Stop(stopCtx)
	if serveErr != nil {
		return errors.Join(fmt.Errorf("executor: serve: %w", serveErr), err)
	}
	err = errors.Join(err, srv.Shutdown(stopCtx))
	<-errc // http.ErrServerClosed
	return err
}

// defaultAddress is http://{ip}:{port}/ for a listener address.
func defaultAddress(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = localIP()
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// localIP is the first non-loopback IPv4 address of the host, or 127.0.0.1.
func localIP() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
				return n.IP.String()
			}
		}
	}
	return "127.0.0.1"
}
