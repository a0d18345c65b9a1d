package lambda

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/logs"
	"github.com/ringjob/ringjob/targets"
)

// sinkTimeout bounds each call the driver makes to the sink.
const sinkTimeout = 10 * time.Second

// idleConnsPerEndpoint is how many idle connections the driver's own HTTP
// client keeps to a Lambda endpoint. The SDK's default (Go's 10 per host)
// made every synchronous invoke beyond ten at a time open a connection of
// its own; each invoke holds one for its whole duration, so a busy second
// needs many.
const idleConnsPerEndpoint = 256

// lastLine reads past any log, to learn only whether a run has ended.
const lastLine = math.MaxInt32

// KilledMessage is the outcome message of a killed Lambda run.
const KilledMessage = "a running Lambda invocation cannot be stopped; Ringjob stopped waiting"

// Driver runs lambda:// targets and Lambda function ARNs. Build it with New
// and stop it with Close. It is safe for concurrent use.
type Driver struct {
	cfg     Config
	log     *logrus.Entry
	sink    targets.Sink
	clock   clockwork.Clock
	awsCfg  aws.Config
	http    aws.HTTPClient
	ownHTTP bool      // http is the driver's own: Close drops its idle connections
	allow   allowList // Config.AllowedFunctions

	ctx    context.Context // parent of synchronous invokes; canceled when Close stops waiting
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	clients  map[string]*awslambda.Client // by region
	invoker  *invoker                     // Invoke without the SDK's middleware stack
	beats    map[string]beat              // GetFunction answers by target key
	syncs    map[int64]*syncRun           // synchronous invokes in flight, by run id
	events   map[int64]*eventRun          // Event runs waiting for their callback, by run id
	closed   bool
	watching bool          // the watchdog goroutine runs
	wake     chan struct{} // wakes the watchdog (capacity 1)
	done     chan struct{} // closed by Close
	wg       sync.WaitGroup
}

// Capabilities: every invocation runs at once (Lambda scales out; the
// scheduler applies the block strategy), away from the replica that sent
// it; results come back in the response or with a run token, never
// through the executor protocol.
func (d *Driver) Capabilities() targets.Capabilities {
	return targets.Capabilities{Unqueued: true}
}

var (
	_ targets.Driver    = (*Driver)(nil)
	_ targets.Validator = (*Driver)(nil)
)

// beat is a cached GetFunction answer.
type beat struct {
	err   error // nil, or an error wrapping targets.ErrUnknownTarget
	until time.Time
}

// New validates cfg and returns a driver. It loads the AWS configuration
// (credentials chain, shared config) once; nothing is contacted yet.
func New(cfg Config) (*Driver, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Log
	log = logs.OrDiscard(log)
	opts := []func(*config.LoadOptions) error{
		// The driver retries by itself (see invoke), so that a retry is a
		// decision it can explain in the run log.
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
		config.WithLogger(sdkLogger{log}),
	}
	if cfg.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(cfg.Credentials))
	}
	awsCfg, err := config.LoadDefaultConfig(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("lambda target driver: load the AWS configuration: %w", err)
	}
	// The SDK's own client (it honours AWS_CA_BUNDLE and proxies), frozen
	// so that Close can drop its idle connections. It has no overall
	// timeout: a synchronous invoke may take 15 minutes; its context bounds it.
	var hc aws.HTTPClient = cfg.HTTPClient
	if cfg.HTTPClient == nil {
		if bc, ok := awsCfg.HTTPClient.(*awshttp.BuildableClient); ok {
			hc = bc.WithTransportOptions(func(t *http.Transport) {
				t.MaxIdleConns = idleConnsPerEndpoint
				t.MaxIdleConnsPerHost = idleConnsPerEndpoint
			}).Freeze()
		} else {
			hc = awsCfg.HTTPClient
		}
	}
	awsCfg.HTTPClient = hc
	allow, _ := parseAllowList(cfg.AllowedFunctions) // checked by Validate
	ctx, cancel := context.WithCancelCause(context.Background())
	return &Driver{
		allow: allow,
		cfg:   cfg, log: log, sink: cfg.Sink, clock: cfg.Clock, awsCfg: awsCfg, http: hc, ownHTTP: cfg.HTTPClient == nil,
		ctx: ctx, cancel: cancel,
		clients: map[string]*awslambda.Client{}, invoker: newInvoker(), beats: map[string]beat{},
		syncs: map[int64]*syncRun{}, events: map[int64]*eventRun{},
		wake: make(chan struct{}, 1), done: make(chan struct{}),
	}, nil
}

// client returns the SDK client of a region.
func (d *Driver) client(region string) *awslambda.Client {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.clients[region]; ok {
		return c
	}
	c := awslambda.NewFromConfig(d.awsCfg, func(o *awslambda.Options) {
		o.Region = region
		if d.cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(d.cfg.Endpoint)
		}
	})
	d.clients[region] = c
	return c
}

// mode is the invocation mode of a target.
func (d *Driver) mode(t target) string {
	if t.mode != "" {
		return t.mode
	}
	return d.cfg.Mode
}

// MaxFunctionDuration is the longest Lambda lets a function run.
const MaxFunctionDuration = 15 * time.Minute

// MaxRunTime bounds a run on target for the scheduler's deadline check, which
// any replica makes from the database (targets.RunLimiter): a synchronous
// invoke is waited for MaxWait at most; an Event run can wait in Lambda's
// queue up to EventMaxAge, then run up to MaxFunctionDuration.
func (d *Driver) MaxRunTime(raw string) time.Duration {
	t, err := parseTarget(raw)
	if err != nil {
		return 0
	}
	if d.mode(t) == ModeEvent {
		return d.cfg.EventMaxAge + MaxFunctionDuration
	}
	return d.cfg.MaxWait
}

// ValidateTarget checks a target's syntax, and that Event mode is
// configured when the target asks for it. It contacts nothing.
func (d *Driver) ValidateTarget(raw string) error {
	t, err := parseTarget(raw)
	if err != nil {
		return err
	}
	if err := d.allow.check(t); err != nil {
		return err
	}
	if d.mode(t) == ModeEvent && (d.cfg.CallbackURL == "" || d.cfg.RunToken == nil) {
		return fmt.Errorf("target %s: %w", raw, ErrEventModeUnconfigured)
	}
	return nil
}

// Run invokes the function. In sync mode it returns at once and a goroutine
// of the driver waits for the invoke and reports through the sink; in Event
// mode it returns once Lambda has queued the event (202), and the function
// reports through the callback. An unknown function is an error wrapping
// targets.ErrUnknownTarget, so failover can move on.
func (d *Driver) Run(ctx context.Context, req targets.Request) (targets.Dispatch, error) {
	if err := ctx.Err(); err != nil {
		return targets.Dispatch{}, fmt.Errorf("run %d on %s: %w", req.RunID, req.Target, err)
	}
	t, err := parseTarget(req.Target)
	if err != nil {
		return targets.Dispatch{}, err
	}
	if err := d.allow.check(t); err != nil { // the config may have changed since the target was saved
		return targets.Dispatch{}, fmt.Errorf("run %d: %w", req.RunID, err)
	}
	if d.mode(t) == ModeEvent {
		return d.runEvent(ctx, t, req)
	}
	return d.runSync(ctx, t, req)
}

// admit checks that the driver may take one more run. dup is true when the
// run is already in flight here.
func (d *Driver) admit(runID int64) (dup bool, err error) {
	if d.closed {
		return false, ErrClosed
	}
	if _, ok := d.syncs[runID]; ok {
		return true, nil
	}
	if _, ok := d.events[runID]; ok {
		return true, nil
	}
	if n := len(d.syncs) + len(d.events); n >= d.cfg.MaxInFlight {
		return false, fmt.Errorf("%w: the lambda driver has %d runs in flight (MaxInFlight %d)", targets.ErrBusy, n, d.cfg.MaxInFlight)
	}
	return false, nil
}

// Beat reports whether the function exists (GetFunction, answers cached for
// BeatTTL). A missing function is an error wrapping targets.ErrUnknownTarget.
func (d *Driver) Beat(ctx context.Context, raw string) error {
	t, err := parseTarget(raw)
	if err != nil {
		return err
	}
	return d.check(ctx, t)
}

// check asks GetFunction whether the function exists and is usable; found
// and not-found answers are cached for BeatTTL, other errors are not.
func (d *Driver) check(ctx context.Context, t target) error {
	now := d.clock.Now()
	d.mu.Lock()
	b, ok := d.beats[t.key()]
	d.mu.Unlock()
	if ok && now.Before(b.until) {
		return b.err
	}
	in := &awslambda.GetFunctionInput{FunctionName: aws.String(t.function)}
	if t.qualifier != "" {
		in.Qualifier = aws.String(t.qualifier)
	}
	out, err := d.client(t.region).GetFunction(ctx, in)
	var nf *types.ResourceNotFoundException
	switch {
	case errors.As(err, &nf):
		err = fmt.Errorf("%w: Lambda function %s does not exist (or the credentials may not see it): %s", targets.ErrUnknownTarget, t, nf.ErrorMessage())
	case err != nil:
		return fmt.Errorf("check Lambda function %s: %w", t, err)
	case out.Configuration != nil && out.Configuration.State == types.StateFailed:
		return fmt.Errorf("lambda function %s is in state Failed: %s", t, aws.ToString(out.Configuration.StateReason))
	}
	d.mu.Lock()
	d.beats[t.key()] = beat{err: err, until: now.Add(d.cfg.BeatTTL)}
	d.mu.Unlock()
	return err
}

// IdleBeat reports targets.ErrBusy while this driver has a synchronous
// invoke of the job in flight, or an Event run of it that has not reported
// yet; otherwise it answers as Beat. Functions scale out, so "busy" only
// says the job itself is running (what busyover routing and the
// DISCARD_LATER block strategy want to know).
func (d *Driver) IdleBeat(ctx context.Context, raw string, jobID int64) error {
	if err := d.Beat(ctx, raw); err != nil {
		return err
	}
	d.mu.Lock()
	for id, s := range d.syncs {
		if s.req.JobID == jobID {
			d.mu.Unlock()
			return fmt.Errorf("%w: job %d has run %d being invoked", targets.ErrBusy, jobID, id)
		}
	}
	var pending []*eventRun
	for _, ev := range d.events {
		if ev.req.JobID == jobID {
			pending = append(pending, ev)
		}
	}
	d.mu.Unlock()
	for _, ev := range pending {
		if d.ended(ctx, ev.req.RunID) {
			d.unwatch(ev)
			continue
		}
		return fmt.Errorf("%w: job %d has Event run %d waiting for its callback", targets.ErrBusy, jobID, ev.req.RunID)
	}
	return nil
}

// Kill marks the run killed and stops waiting for it: a running Lambda
// invocation cannot be stopped, so the function itself runs on until it
// ends or times out. A synchronous invoke is abandoned (its goroutine
// reports the run killed); an Event run, or a run this driver does not know
// (dispatched by another replica, or before a restart), is completed as
// killed here unless it has already ended. Killing a run that has ended is
// not an error.
func (d *Driver) Kill(ctx context.Context, _ string, runID, _ int64) error {
	d.mu.Lock()
	if s, ok := d.syncs[runID]; ok {
		d.mu.Unlock()
		s.cancel(errKilled)
		return nil
	}
	ev := d.events[runID]
	delete(d.events, runID)
	d.mu.Unlock()
	chunk, err := d.sink.ReadLog(ctx, runID, lastLine)
	if err != nil && ev == nil {
		return nil // a run the sink does not know: nothing to kill
	}
	if err == nil && chunk.End {
		return nil
	}
	d.appendLog(runID, "[ringjob] killed: "+KilledMessage+"\n")
	d.complete(runID, targets.Outcome{State: kind.RunKilled, Code: 500, Message: KilledMessage})
	return nil
}

// Log reads the run's log from the sink, from a 1-based line. (Lambda keeps
// logs in CloudWatch; the driver copies the log tail of synchronous invokes
// into the run's log.)
func (d *Driver) Log(ctx context.Context, _ string, runID int64, fromLine int) (targets.LogChunk, error) {
	chunk, err := d.sink.ReadLog(ctx, runID, fromLine)
	if err != nil {
		return targets.LogChunk{}, fmt.Errorf("read log of run %d from line %d: %w", runID, fromLine, err)
	}
	return chunk, nil
}

// Close stops taking runs and waits for the synchronous invokes in flight.
// When ctx ends first, it stops waiting for them: each is reported failed
// ("the invocation may still be running on Lambda"), and Close returns
// ctx's error once their goroutines have ended. Event runs waiting for
// their callback are left to it (the watchdog stops). Safe to call twice.
func (d *Driver) Close(ctx context.Context) error {
	d.mu.Lock()
	if !d.closed {
		d.closed = true
		close(d.done)
	}
	n := len(d.syncs)
	d.mu.Unlock()
	all := make(chan struct{})
	go func() {
		d.wg.Wait()
		close(all)
	}()
	var err error
	select {
	case <-all:
	case <-ctx.Done():
		err = fmt.Errorf("close lambda target driver: %d synchronous invoke(s) abandoned: %w", n, ctx.Err())
		d.cancel(errClosing)
		<-all
	}
	d.cancel(errClosing) // every invoke has ended; this only releases the context
	if c, ok := d.http.(interface{ CloseIdleConnections() }); ok && d.ownHTTP {
		c.CloseIdleConnections()
	}
	return err
}

// ended reports whether the run already has its outcome in the sink.
func (d *Driver) ended(ctx context.Context, runID int64) bool {
	chunk, err := d.sink.ReadLog(ctx, runID, lastLine)
	return err == nil && chunk.End
}

func (d *Driver) appendLog(runID int64, text string) {
	ctx, cancel := context.WithTimeout(context.Background(), sinkTimeout)
	defer cancel()
	if err := d.sink.AppendLog(ctx, runID, text); err != nil {
		d.log.WithError(err).WithField("run_id", runID).Warn("append to run log")
	}
}

func (d *Driver) complete(runID int64, out targets.Outcome) {
	ctx, cancel := context.WithTimeout(context.Background(), sinkTimeout)
	defer cancel()
	if err := d.sink.Complete(ctx, runID, out); err != nil {
		d.log.WithError(err).WithFields(logrus.Fields{"run_id": runID, "state": out.State}).Error("record run outcome")
	}
}
