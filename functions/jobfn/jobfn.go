package jobfn

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
)

// Func is a job handler: it gets the run's trigger and its log, and returns
// a result (any JSON value, or nil) or an error.
type Func func(ctx context.Context, t Trigger, log *Logger) (any, error)

// LambdaHandler is the function aws-lambda-go runs (see Handler).
type LambdaHandler func(ctx context.Context, t Trigger) (*Response, error)

// Option tunes Handler and Start.
type Option func(*options)

type options struct {
	out             io.Writer
	client          *http.Client
	attempts        int
	backoff         time.Duration
	maxLines        int
	maxBytes        int
	callbackTimeout time.Duration
}

// Defaults of the options.
const (
	DefaultCallbackAttempts = 4
	DefaultCallbackBackoff  = 250 * time.Millisecond
	DefaultMaxLogLines      = 1000
	DefaultMaxLogBytes      = 256 << 10
	DefaultCallbackTimeout  = 5 * time.Second
)

// WithOutput sends log lines to w instead of os.Stdout.
func WithOutput(w io.Writer) Option { return func(o *options) { o.out = w } }

// WithHTTPClient sets the client for callbacks (default: a client with a
// per-attempt timeout of 5s).
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.client = c } }

// WithCallbackRetries sets how many times a callback is tried (at least 1)
// and the first pause between tries, which doubles each time.
func WithCallbackRetries(attempts int, backoff time.Duration) Option {
	return func(o *options) {
		o.attempts = max(attempts, 1)
		o.backoff = max(backoff, 0)
	}
}

// WithLogCap caps the log lines collected for the response or callback
// (stdout gets every line regardless).
func WithLogCap(lines, bytes int) Option {
	return func(o *options) {
		o.maxLines = max(lines, 0)
		o.maxBytes = max(bytes, 0)
	}
}

func buildOptions(opts []Option) options {
	o := options{
		out: os.Stdout, attempts: DefaultCallbackAttempts, backoff: DefaultCallbackBackoff,
		maxLines: DefaultMaxLogLines, maxBytes: DefaultMaxLogBytes, callbackTimeout: DefaultCallbackTimeout,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.client == nil {
		o.client = &http.Client{Timeout: o.callbackTimeout}
	}
	return o
}

// Start runs fn as the Lambda function's handler; it does not return. Call
// it from main.
func Start(fn Func, opts ...Option) {
	lambda.Start(Handler(fn, opts...))
}

// Handler wraps fn as an aws-lambda-go handler (Start uses it; tests call it
// directly).
//
// Synchronous mode (no callback_url): the handler's result comes back as
// {"ok":true,"result":...,"log":[...]}; its error becomes the invocation's
// function error (errorType is the error's Go type name, errorMessage its
// text), and a panic is left to aws-lambda-go, which reports it and ends the
// process.
//
// Event mode (callback_url set): after fn returns, the outcome goes to
// callback_url as an XXL-JOB callback with the run token, retried with
// backoff. The function then returns success to Lambda whatever fn did, so
// that Lambda's own asynchronous retries never re-run a job: retries are
// Ringjob's decision. A panic in fn is reported as a failure.
func Handler(fn Func, opts ...Option) LambdaHandler {
	o := buildOptions(opts)
	return func(ctx context.Context, t Trigger) (*Response, error) {
		log := newLogger(o.out, o.maxLines, o.maxBytes)
		if !t.Async() {
			res, err := fn(ctx, t, log)
			if err != nil {
				return nil, err
			}
			return &Response{OK: true, Result: res, Log: log.Lines()}, nil
		}
		res, err := callSafely(ctx, fn, t, log)
		resp := &Response{OK: err == nil, Result: res, Log: log.Lines()}
		if err != nil {
			resp.Error = err.Error()
		}
		cb := newCallback(t, res, err, resp.Log)
		if cerr := o.send(ctx, t, cb); cerr != nil {
			log.Printf("jobfn: could not report run %d to %s: %v", t.RunID, t.CallbackURL, cerr)
		}
		return resp, nil
	}
}

// callSafely runs fn and turns a panic into an error.
func callSafely(ctx context.Context, fn Func, t Trigger, log *Logger) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			log.Printf("panic: %v\n%s", p, debug.Stack())
			res, err = nil, fmt.Errorf("panic: %v", p)
		}
	}()
	return fn(ctx, t, log)
}

// maxHandleMsg caps handleMsg (XXL-JOB keeps at most 15000 characters).
const maxHandleMsg = 4000

// summary renders a result or error for handleMsg.
func summary(res any, err error) string {
	var s string
	switch {
	case err != nil:
		s = err.Error()
	case res == nil:
		s = "ok"
	default:
		b, merr := json.Marshal(res)
		if merr != nil {
			s = fmt.Sprintf("%v", res)
		} else {
			s = string(b)
		}
	}
	if len(s) > maxHandleMsg {
		s = s[:maxHandleMsg] + "..."
	}
	return s
}
