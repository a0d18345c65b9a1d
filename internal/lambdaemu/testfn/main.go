// Command testfn is the function the emulator's and the Lambda driver's
// tests run. What it does is chosen by the trigger's handler, or, when that
// is empty, by the environment variable TESTFN_ACTION:
//
//	ok      log "line one" and "line two", return {"echo": params}
//	fail    log "about to fail", return the error "boom: PARAMS"
//	sleep   log "sleeping", then sleep (params: a Go duration, default 1h)
//	        without looking at the deadline, like a stuck function
//	crash   log "crashing" and exit with status 3
//	panic   panic("kaboom")
//	spam    log N numbered lines (params: N, default 500)
//	stderr  write "to stderr" on stderr, then succeed
//	env     return the Lambda environment it sees
//
// TESTFN_INIT=crash makes the process exit during init, before it asks for
// an invocation.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/ringjob/ringjob/functions/jobfn"
)

func handle(ctx context.Context, t jobfn.Trigger, log *jobfn.Logger) (any, error) {
	action := t.Handler
	if action == "" {
		action = os.Getenv("TESTFN_ACTION")
	}
	switch action {
	case "", "ok":
		log.Println("line one")
		log.Println("line two")
		return map[string]string{"echo": t.Params}, nil
	case "fail":
		log.Println("about to fail")
		return nil, errors.New("boom: " + t.Params)
	case "sleep":
		d := time.Hour
		if p, err := time.ParseDuration(t.Params); err == nil {
			d = p
		}
		log.Printf("sleeping %s", d)
		time.Sleep(d)
		return map[string]string{"slept": d.String()}, nil
	case "crash":
		log.Println("crashing")
		os.Exit(3)
	case "panic":
		panic("kaboom")
	case "spam":
		n, err := strconv.Atoi(t.Params)
		if err != nil {
			n = 500
		}
		for i := 1; i <= n; i++ {
			log.Printf("spam line %04d", i)
		}
		return map[string]int{"lines": n}, nil
	case "stderr":
		fmt.Fprintln(os.Stderr, "to stderr")
		return "ok", nil
	case "env":
		lc, _ := lambdacontext.FromContext(ctx)
		dl, _ := ctx.Deadline()
		out := map[string]any{"deadline_in_ms": time.Until(dl).Milliseconds()}
		if lc != nil {
			out["request_id"] = lc.AwsRequestID
			out["invoked_arn"] = lc.InvokedFunctionArn
		}
		for _, k := range []string{"AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "AWS_LAMBDA_FUNCTION_VERSION",
			"AWS_REGION", "_HANDLER", "AWS_LAMBDA_LOG_GROUP_NAME", "AWS_LAMBDA_LOG_STREAM_NAME", "TESTFN_EXTRA", "_X_AMZN_TRACE_ID"} {
			out[k] = os.Getenv(k)
		}
		return out, nil
	}
	return nil, fmt.Errorf("testfn: unknown action %q", action)
}

func main() {
	if os.Getenv("TESTFN_INIT") == "crash" {
		fmt.Println("init: crashing before the first invocation")
		os.Exit(2)
	}
	jobfn.Start(handle)
}
