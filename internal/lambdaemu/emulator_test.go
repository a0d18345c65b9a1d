package lambdaemu

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"github.com/ringjob/ringjob/functions/jobfn"
	"github.com/ringjob/ringjob/internal/lambdaemu/emutest"
)

// bins are the function binaries, built once by TestMain.
var bins map[string]string

type mainWithCleanup struct {
	m   *testing.M
	dir string
}

func (w mainWithCleanup) Run() int {
	defer os.RemoveAll(w.dir)
	var err error
	if bins, err = emutest.Build(w.dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return w.m.Run()
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lambdaemu-test-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	goleak.VerifyTestMain(mainWithCleanup{m: m, dir: dir})
}

const wait = 20 * time.Second

type bundle struct {
	e       *Emulator
	client  *lambda.Client
	records chan Record
	ctx     context.Context
}

// setup starts an emulator with fns (paths are binary names of bins) and an
// SDK client for it, both closed when the test ends.
func setup(t *testing.T, fns ...Function) *bundle {
	t.Helper()
	t.Parallel()
	for i := range fns {
		fns[i].Path = bins[fns[i].Path]
	}
	records := make(chan Record, 64)
	l := logrus.New()
	l.SetOutput(io.Discard)
	e, err := New(Options{Functions: fns, Log: logrus.NewEntry(l), OnInvoke: func(r Record) {
		select {
		case records <- r:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(func() {
		cancel()
		cctx, ccancel := context.WithTimeout(context.Background(), wait)
		defer ccancel()
		if err := e.Close(cctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		hc.CloseIdleConnections()
	})
	client := lambda.NewFromConfig(aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:  hc,
		Retryer:     func() aws.Retryer { return aws.NopRetryer{} },
	}, func(o *lambda.Options) { o.BaseEndpoint = aws.String(e.URL()) })
	return &bundle{e: e, client: client, records: records, ctx: ctx}
}

func trigger(t *testing.T, handler, params string) []byte {
	t.Helper()
	b, err := json.Marshal(jobfn.Trigger{JobID: 1, RunID: 2, Handler: handler, Params: params, ShardTotal: 1, ScheduledAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *bundle) invoke(t *testing.T, fn, handler, params string) (*lambda.InvokeOutput, string) {
	t.Helper()
	out, err := b.client.Invoke(b.ctx, &lambda.InvokeInput{
		FunctionName: aws.String(fn), Payload: trigger(t, handler, params), LogType: types.LogTypeTail,
	})
	if err != nil {
		t.Fatalf("Invoke(%s, %s): %v", fn, handler, err)
	}
	tail, err := base64.StdEncoding.DecodeString(aws.ToString(out.LogResult))
	if err != nil {
		t.Fatalf("X-Amz-Log-Result is not base64: %v", err)
	}
	return out, string(tail)
}

// record waits for the next finished invocation.
func (b *bundle) record(t *testing.T) Record {
	t.Helper()
	select {
	case r := <-b.records:
		return r
	case <-time.After(wait):
		t.Fatal("no invocation finished")
		return Record{}
	}
}

type errorBody struct {
	ErrorMessage string `json:"errorMessage"`
	ErrorType    string `json:"errorType"`
}

func decodeError(t *testing.T, out *lambda.InvokeOutput) errorBody {
	t.Helper()
	if aws.ToString(out.FunctionError) != "Unhandled" {
		t.Fatalf("FunctionError = %q, want Unhandled; payload %s", aws.ToString(out.FunctionError), out.Payload)
	}
	var eb errorBody
	if err := json.Unmarshal(out.Payload, &eb); err != nil {
		t.Fatalf("error payload %q: %v", out.Payload, err)
	}
	return eb
}

func wantInOrder(t *testing.T, log string, parts ...string) {
	t.Helper()
	rest := log
	for _, p := range parts {
		i := strings.Index(rest, p)
		if i < 0 {
			t.Fatalf("log lacks %q (in order %q):\n%s", p, parts, log)
		}
		rest = rest[i+len(p):]
	}
}

func TestInvokeSync(t *testing.T) {
	t.Run("success returns the payload and the log tail", func(t *testing.T) {
		b := setup(t, Function{Name: "hello", Path: "hello"})
		out, tail := b.invoke(t, "hello", "", `{"name":"Ringjob"}`)
		if out.StatusCode != 200 || out.FunctionError != nil || aws.ToString(out.ExecutedVersion) != "$LATEST" {
			t.Fatalf("status %d, function error %v, version %v", out.StatusCode, aws.ToString(out.FunctionError), aws.ToString(out.ExecutedVersion))
		}
		var resp struct {
			OK     bool `json:"ok"`
			Result struct {
				Greeting string `json:"greeting"`
			} `json:"result"`
			Log []string `json:"log"`
		}
		if err := json.Unmarshal(out.Payload, &resp); err != nil || !resp.OK || resp.Result.Greeting != "Hello, Ringjob!" || len(resp.Log) != 2 {
			t.Fatalf("payload %s (%v)", out.Payload, err)
		}
		wantInOrder(t, tail, "START RequestId: ", " Version: $LATEST\n", "hello: job 1 run 2 shard 0/1 attempt 0\n",
			`params: {"name":"Ringjob"}`+"\n", "END RequestId: ", "REPORT RequestId: ", "\tDuration: ", " ms\tBilled Duration: ", "\tMemory Size: 128 MB", "\tInit Duration: ")
		if r := b.record(t); !r.Cold || r.Type != TypeRequestResponse || r.Function != "hello" {
			t.Fatalf("record %+v, want a cold RequestResponse of hello", r)
		}

		out, tail = b.invoke(t, "hello", "", "again")
		if out.FunctionError != nil || !strings.Contains(tail, "params: again") || strings.Contains(tail, "Ringjob") || strings.Contains(tail, "Init Duration") {
			t.Fatalf("second invocation: error %v, tail:\n%s", aws.ToString(out.FunctionError), tail)
		}
		if r := b.record(t); r.Cold {
			t.Fatal("second invocation started a new process; want the warm one reused")
		}
	})

	t.Run("stderr is in the log tail and no tail without LogType", func(t *testing.T) {
		b := setup(t, Function{Name: "fn", Path: "testfn"})
		_, tail := b.invoke(t, "fn", "stderr", "")
		wantInOrder(t, tail, "START", "to stderr\n", "END")
		out, err := b.client.Invoke(b.ctx, &lambda.InvokeInput{FunctionName: aws.String("fn"), Payload: trigger(t, "ok", "")})
		if err != nil || out.LogResult != nil {
			t.Fatalf("Invoke without LogType: %v, LogResult %v", err, out.LogResult)
		}
	})

	t.Run("the tail is the last 4 KB", func(t *testing.T) {
		b := setup(t, Function{Name: "fn", Path: "testfn"})
		_, tail := b.invoke(t, "fn", "spam", "500")
		if len(tail) > 4096 || len(tail) < 4000 {
			t.Fatalf("tail is %d bytes, want at most 4096 and close to it", len(tail))
		}
		if strings.Contains(tail, "START RequestId") || !strings.Contains(tail, "spam line 0500\n") || !strings.HasPrefix(tail[strings.LastIndex(tail, "\nREPORT")+1:], "REPORT") {
			t.Fatalf("tail does not end the log:\n%s", tail)
		}
	})

	t.Run("the function sees Lambda's environment", func(t *testing.T) {
		b := setup(t, Function{Name: "fn", Path: "testfn", Timeout: 7 * time.Second, MemorySize: 256, Aliases: []string{"live"}, Env: map[string]string{"TESTFN_EXTRA": "x"}})
		out, err := b.client.Invoke(b.ctx, &lambda.InvokeInput{FunctionName: aws.String(b.e.FunctionARN("fn")), Qualifier: aws.String("live"), Payload: trigger(t, "env", "")})
		if err != nil || out.FunctionError != nil {
			t.Fatalf("Invoke: %v %s", err, out.Payload)
		}
		var resp struct {
			Result map[string]any `json:"result"`
		}
		if err := json.Unmarshal(out.Payload, &resp); err != nil {
			t.Fatal(err)
		}
		env := resp.Result
		want := map[string]any{
			"AWS_LAMBDA_FUNCTION_NAME": "fn", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256", "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
			"AWS_REGION": "us-east-1", "_HANDLER": "bootstrap", "AWS_LAMBDA_LOG_GROUP_NAME": "/aws/lambda/fn", "TESTFN_EXTRA": "x",
			"invoked_arn": "arn:aws:lambda:us-east-1:000000000000:function:fn:live",
		}
		for k, v := range want {
			if env[k] != v {
				t.Errorf("%s = %v, want %v", k, env[k], v)
			}
		}
		if ms, _ := env["deadline_in_ms"].(float64); ms <= 5000 || ms > 7000 {
			t.Errorf("deadline in %v ms, want about 7000", env["deadline_in_ms"])
		}
		if s, _ := env["_X_AMZN_TRACE_ID"].(string); !strings.HasPrefix(s, "Root=1-") {
			t.Errorf("trace id %q", s)
		}
		if s, _ := env["request_id"].(string); len(s) != 36 {
			t.Errorf("request id %q", s)
		}
	})

	t.Run("DryRun checks the function without running it", func(t *testing.T) {
		b := setup(t, Function{Name: "fn", Path: "testfn"})
		out, err := b.client.Invoke(b.ctx, &lambda.InvokeInput{FunctionName: aws.String("fn"), InvocationType: types.InvocationTypeDryRun})
		if err != nil || out.StatusCode != 204 {
			t.Fatalf("DryRun: %v, status %d", err, out.StatusCode)
		}
	})
}

func TestFunctionErrors(t *testing.T) {
	t.Run("a returned error is an Unhandled function error", func(t *testing.T) {
		b := setup(t, Function{Name: "fn", Path: "testfn"})
		out, tail := b.invoke(t, "fn", "fail", "disk full")
		eb := decodeError(t, out)
		if out.StatusCode != 200 || eb.ErrorMessage != "boom: disk full" || eb.ErrorType != "errorString" {
			t.Fatalf("status %d, error %+v", out.StatusCode, eb)
		}
		wantInOrder(t, tail, "START", "about to fail\n", `"errorMessage":"boom: disk full"`, "END", "REPORT")
		// The process survives a returned error.
		out, _ = b.invoke(t, "fn", "ok", "")
		if out.FunctionError != nil {
			t.Fatalf("after a function error: %s", out.Payload)
		}
		b.record(t)
		if r := b.record(t); r.Cold {
			t.Fatal("a returned error should not cost the process")
		}
	})

	t.Run("a timeout fails the invocation and kills the process", func(t *testing.T) {
		b := setup(t, Function{Name: "fn", Path: "testfn", Timeout: 500 * time.Millisecond})
		out, tail := b.invoke(t, "fn", "sleep", "1h")
		eb := decodeError(t, out)
		if !strings.HasSuffix(eb.ErrorMessage, " Task timed out after 0.50 seconds") || eb.ErrorType != "" {
			t.Fatalf("error %+v, want a Task timed out message without a type", eb)
		}
		wantInOrder(t, tail, "sleeping 1h0m0s\n", "Task timed out after 0.50 seconds\n", "END", "REPORT")
		b.record(t)
		out, _ = b.invoke(t, "fn", "ok", "")
		if out.FunctionError != nil {
			t.Fatalf("after a timeout: %s", out.Payload)
		}
		if r := b.record(t); !r.Cold {
			t.Fatal("the invocation after a timeout reused the killed process")
		}
	})

	t.Run("a crashed process is restarted", func(t *testing.T) {
		b := setup(t, Function{Name: "fn", Path: "testfn"})
		out, tail := b.invoke(t, "fn", "crash", "")
		eb := decodeError(t, out)
		if eb.ErrorType != "Runtime.ExitError" || !strings.HasSuffix(eb.ErrorMessage, "Error: Runtime exited with error: exit status 3") {
			t.Fatalf("error %+v", eb)
		}
		wantInOrder(t, tail, "crashing\n", "Runtime exited with error: exit status 3\nRuntime.ExitError\n", "END")
		b.record(t)
		out, _ = b.invoke(t, "fn", "ok", "")
		if out.FunctionError != nil {
			t.Fatalf("after a crash: %s", out.Payload)
		}
		if r := b.record(t); !r.Cold {
			t.Fatal("the invocation after a crash did not start a new process")
		}
	})

	t.Run("a panic is reported and ends the process", func(t *testing.T) {
		b := setup(t, Function{Name: "fn", Path: "testfn"})
		out, _ := b.invoke(t, "fn", "panic", "")
		if eb := decodeError(t, out); eb.ErrorMessage != "kaboom" {
			t.Fatalf("error %+v", eb)
		}
		b.record(t)
		out, _ = b.invoke(t, "fn", "ok", "")
		if out.FunctionError != nil {
			t.Fatalf("after a panic: %s", out.Payload)
		}
	})

	t.Run("a crash during init is a Runtime.ExitError", func(t *testing.T) {
		b := setup(t, Function{Name: "fn", Path: "testfn", Env: map[string]string{"TESTFN_INIT": "crash"}})
		out, tail := b.invoke(t, "fn", "ok", "")
		eb := decodeError(t, out)
		if eb.ErrorType != "Runtime.ExitError" || !strings.Contains(eb.ErrorMessage, "exit status 2") {
			t.Fatalf("error %+v", eb)
		}
		wantInOrder(t, tail, "init: crashing before the first invocation\n", "Runtime.ExitError")
	})
}

func TestErrorsTheSDKParses(t *testing.T) {
	b := setup(t, Function{Name: "fn", Path: "testfn", Aliases: []string{"live"}})
	for _, tc := range []struct {
		name, fn, qualifier, arn string
	}{
		{"unknown name", "nope", "", "arn:aws:lambda:us-east-1:000000000000:function:nope"},
		{"unknown ARN", "arn:aws:lambda:us-east-1:000000000000:function:nope", "", "arn:aws:lambda:us-east-1:000000000000:function:nope"},
		{"other region", "arn:aws:lambda:eu-west-1:000000000000:function:fn", "", "arn:aws:lambda:us-east-1:000000000000:function:fn"},
		{"unknown alias", "fn", "old", "arn:aws:lambda:us-east-1:000000000000:function:fn:old"},
	} {
		t.Run("invoke: "+tc.name, func(t *testing.T) {
			in := &lambda.InvokeInput{FunctionName: aws.String(tc.fn), Payload: []byte(`{}`)}
			if tc.qualifier != "" {
				in.Qualifier = aws.String(tc.qualifier)
			}
			_, err := b.client.Invoke(b.ctx, in)
			var nf *types.ResourceNotFoundException
			if !errors.As(err, &nf) {
				t.Fatalf("Invoke(%s) error %T %v, want ResourceNotFoundException", tc.fn, err, err)
			}
			if got, want := nf.ErrorMessage(), "Function not found: "+tc.arn; got != want {
				t.Fatalf("message %q, want %q", got, want)
			}
			if aws.ToString(nf.Type) != "User" {
				t.Fatalf("Type %q, want User", aws.ToString(nf.Type))
			}
		})
	}

	t.Run("get function", func(t *testing.T) {
		out, err := b.client.GetFunction(b.ctx, &lambda.GetFunctionInput{FunctionName: aws.String("fn"), Qualifier: aws.String("live")})
		if err != nil {
			t.Fatal(err)
		}
		c := out.Configuration
		if aws.ToString(c.FunctionName) != "fn" || aws.ToString(c.FunctionArn) != "arn:aws:lambda:us-east-1:000000000000:function:fn:live" ||
			c.Runtime != types.RuntimeProvidedal2023 || c.State != types.StateActive || aws.ToInt32(c.Timeout) != 3 || aws.ToInt32(c.MemorySize) != 128 {
			t.Fatalf("configuration %+v", c)
		}
		_, err = b.client.GetFunction(b.ctx, &lambda.GetFunctionInput{FunctionName: aws.String("nope")})
		var nf *types.ResourceNotFoundException
		if !errors.As(err, &nf) {
			t.Fatalf("GetFunction(nope): %v", err)
		}
	})

	t.Run("payload that is not JSON", func(t *testing.T) {
		_, err := b.client.Invoke(b.ctx, &lambda.InvokeInput{FunctionName: aws.String("fn"), Payload: []byte("not json")})
		var ic *types.InvalidRequestContentException
		if !errors.As(err, &ic) {
			t.Fatalf("error %v, want InvalidRequestContentException", err)
		}
	})
}

func TestConcurrencyLimit(t *testing.T) {
	b := setup(t, Function{Name: "busy", Path: "testfn", MaxConcurrency: 1, QueueSize: 1, Timeout: 10 * time.Second})
	f := b.e.funcs["busy"]
	type answer struct {
		out *lambda.InvokeOutput
		err error
	}
	first, second := make(chan answer, 1), make(chan answer, 1)
	go func() {
		out, err := b.client.Invoke(b.ctx, &lambda.InvokeInput{FunctionName: aws.String("busy"), Payload: trigger(t, "sleep", "400ms")})
		first <- answer{out, err}
	}()
	waitFor(t, "the first invocation to take the only slot", func() bool { return len(f.slots) == 1 })
	go func() {
		out, err := b.client.Invoke(b.ctx, &lambda.InvokeInput{FunctionName: aws.String("busy"), Payload: trigger(t, "ok", "queued")})
		second <- answer{out, err}
	}()
	waitFor(t, "the second invocation to queue", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.waiting == 1
	})

	_, err := b.client.Invoke(b.ctx, &lambda.InvokeInput{FunctionName: aws.String("busy"), Payload: trigger(t, "ok", "")})
	var tm *types.TooManyRequestsException
	if !errors.As(err, &tm) {
		t.Fatalf("third invocation: %v, want TooManyRequestsException", err)
	}
	if tm.Reason != types.ThrottleReasonReservedFunctionConcurrentInvocationLimitExceeded || tm.ErrorMessage() != "Rate Exceeded." {
		t.Fatalf("throttle %+v (%q)", tm, tm.ErrorMessage())
	}
	for i, ch := range []chan answer{first, second} {
		a := <-ch
		if a.err != nil || a.out.FunctionError != nil {
			t.Fatalf("invocation %d: %v %s", i+1, a.err, a.out.Payload)
		}
	}
	// Event invocations are throttled only when their queue is full.
	out, err := b.client.Invoke(b.ctx, &lambda.InvokeInput{FunctionName: aws.String("busy"), InvocationType: types.InvocationTypeEvent, Payload: trigger(t, "ok", "")})
	if err != nil || out.StatusCode != 202 {
		t.Fatalf("Event while idle: %v", err)
	}
}

func TestEventInvocation(t *testing.T) {
	b := setup(t, Function{Name: "fn", Path: "testfn"})
	type got struct {
		token string
		body  jobfn.Callback
	}
	calls := make(chan got, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var cb jobfn.Callback
		_ = json.NewDecoder(r.Body).Decode(&cb)
		calls <- got{token: r.Header.Get(jobfn.RunTokenHeader), body: cb}
		_, _ = w.Write([]byte(`{"code":200,"msg":"Success"}`))
	}))
	defer srv.Close()

	payload, _ := json.Marshal(jobfn.Trigger{JobID: 7, RunID: 42, Handler: "ok", Params: "bg", ShardTotal: 1,
		ScheduledAt: time.UnixMilli(1_700_000_000_000).UTC(), CallbackURL: srv.URL, CallbackToken: "rjr_secret"})
	out, err := b.client.Invoke(b.ctx, &lambda.InvokeInput{FunctionName: aws.String("fn"), InvocationType: types.InvocationTypeEvent, Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	if out.StatusCode != 202 || len(out.Payload) != 0 {
		t.Fatalf("Event: status %d payload %q, want 202 and nothing", out.StatusCode, out.Payload)
	}
	r := b.record(t)
	if r.Type != TypeEvent || r.FunctionError != "" || !strings.Contains(r.Log, "line two") {
		t.Fatalf("record %+v", r)
	}
	select {
	case c := <-calls:
		item := c.body.CallbackList[0]
		if c.token != "rjr_secret" || item.LogID != 42 || item.HandleCode != 200 || item.LogDateTime != 1_700_000_000_000 ||
			item.HandleMsg != `{"echo":"bg"}` || strings.Join(item.Log, "|") != "line one|line two" {
			t.Fatalf("callback %+v", c)
		}
	case <-time.After(wait):
		t.Fatal("no callback")
	}
}

func TestCloseKillsRunningInvocations(t *testing.T) {
	b := setup(t, Function{Name: "fn", Path: "testfn", Timeout: time.Minute})
	f := b.e.funcs["fn"]
	errs := make(chan error, 1)
	go func() {
		_, err := b.client.Invoke(b.ctx, &lambda.InvokeInput{FunctionName: aws.String("fn"), Payload: trigger(t, "sleep", "1h")})
		errs <- err
	}()
	waitFor(t, "the invocation to start", func() bool { return len(f.slots) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := b.e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var se *types.ServiceException
	if err := <-errs; !errors.As(err, &se) {
		t.Fatalf("invocation during Close: %v, want ServiceException", err)
	}
	if err := b.e.Start(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Close: %v", err)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	err := Options{Region: "moon", Functions: []Function{
		{Name: "ok", Path: os.Args[0]}, {Name: "ok", Path: os.Args[0]}, {Name: "bad name", Path: "/nonexistent"}, {Name: "x", Path: os.Args[0], Aliases: []string{"$LATEST"}},
	}}.Validate()
	for _, want := range []string{"Region", "Functions[1].Name", "Functions[2].Name", "Functions[2].Path", "Functions[3].Aliases[0]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want a message naming %s", err, want)
		}
	}
}

// waitFor polls cond (cheap, in-memory) until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
