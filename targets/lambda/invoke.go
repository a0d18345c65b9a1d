package lambda

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/targets"
)

// Payload is the JSON a function receives: the trigger of one run. It is
// the contract documented in docs/lambda.md (and decoded by
// functions/jobfn.Trigger).
type Payload struct {
	JobID       int64  `json:"job_id"`
	RunID       int64  `json:"run_id"`
	Handler     string `json:"handler"`
	Params      string `json:"params"`
	ShardIndex  int    `json:"shard_index"`
	ShardTotal  int    `json:"shard_total"`
	ScheduledAt string `json:"scheduled_at,omitempty"` // RFC 3339, UTC
	Attempt     int    `json:"attempt"`
	// Event mode only.
	CallbackURL   string `json:"callback_url,omitempty"`
	CallbackToken string `json:"callback_token,omitempty"`
}

// payload builds the trigger JSON of a request.
func (d *Driver) payload(req targets.Request, event bool) ([]byte, error) {
	p := Payload{
		JobID: req.JobID, RunID: req.RunID, Handler: req.Handler, Params: req.Params,
		ShardIndex: req.ShardIndex, ShardTotal: max(req.ShardTotal, 1), Attempt: req.Attempt,
	}
	if !req.ScheduledAt.IsZero() {
		p.ScheduledAt = req.ScheduledAt.UTC().Format(time.RFC3339Nano)
	}
	if event {
		p.CallbackURL = d.cfg.CallbackURL
		p.CallbackToken = d.cfg.RunToken(req.RunID)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode the payload of run %d: %w", req.RunID, err)
	}
	return b, nil
}

// invokeInput is the Invoke request for a target.
func invokeInput(t target, typ types.InvocationType, payload []byte) *awslambda.InvokeInput {
	in := &awslambda.InvokeInput{FunctionName: aws.String(t.function), InvocationType: typ, Payload: payload}
	if typ == types.InvocationTypeRequestResponse {
		in.LogType = types.LogTypeTail
	}
	if t.qualifier != "" {
		in.Qualifier = aws.String(t.qualifier)
	}
	return in
}

// invoke calls Invoke, retrying throttling (429), server errors (5xx) and
// failed connections up to MaxAttempts times with exponential backoff and
// jitter, within ctx. A missing function is an error wrapping
// targets.ErrUnknownTarget. Retrying a 5xx of a synchronous invoke may run
// the function twice when Lambda had started it; the run id in the payload
// lets the function notice.
func (d *Driver) invoke(ctx context.Context, t target, in *awslambda.InvokeInput) (*awslambda.InvokeOutput, string, error) {
	client := d.client(t.region)
	for attempt := 1; ; attempt++ {
		out, reqID, err := d.invoker.invoke(ctx, t.region, client, in)
		if err == nil {
			return out, reqID, nil
		}
		var nf *types.ResourceNotFoundException
		if errors.As(err, &nf) {
			return nil, "", fmt.Errorf("%w: Lambda function %s: %s", targets.ErrUnknownTarget, t, nf.ErrorMessage())
		}
		wait, retry := d.retryAfter(err, attempt)
		if !retry || attempt >= d.cfg.MaxAttempts || ctx.Err() != nil {
			return nil, "", fmt.Errorf("invoke Lambda function %s (%d attempt(s)): %w", t, attempt, err)
		}
		d.log.WithError(err).WithFields(map[string]any{"function": t.String(), "attempt": attempt, "wait_ms": wait.Milliseconds()}).Info("invoke failed; retrying")
		timer := d.clock.NewTimer(wait)
		select {
		case <-timer.Chan():
		case <-ctx.Done():
			timer.Stop()
			return nil, "", fmt.Errorf("invoke Lambda function %s (%d attempt(s), then gave up waiting): %w", t, attempt, err)
		}
	}
}

// retryAfter says whether err is worth another attempt and how long to wait.
func (d *Driver) retryAfter(err error, attempt int) (time.Duration, bool) {
	wait := d.backoff(attempt)
	var tm *types.TooManyRequestsException
	if errors.As(err, &tm) {
		if s, perr := strconv.Atoi(aws.ToString(tm.RetryAfterSeconds)); perr == nil && s > 0 {
			wait = min(max(wait, time.Duration(s)*time.Second), d.cfg.BackoffMax)
		}
		return wait, true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return wait, true // never reached Lambda
	}
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) {
		code := status.HTTPStatusCode()
		// 409 ResourceConflictException: the function is being created or
		// updated (state Pending); it passes.
		return wait, code == 429 || code == 409 || code >= 500
	}
	return 0, false
}

// backoff is the pause before attempt+1: BackoffBase doubled per attempt,
// capped at BackoffMax, with jitter (between half and all of it).
func (d *Driver) backoff(attempt int) time.Duration {
	b := d.cfg.BackoffBase << min(attempt-1, 20)
	if b <= 0 || b > d.cfg.BackoffMax {
		b = d.cfg.BackoffMax
	}
	return b/2 + time.Duration(rand.Int64N(int64(b/2)+1))
}

// functionError is Lambda's error payload.
type functionError struct {
	ErrorMessage string `json:"errorMessage"`
	ErrorType    string `json:"errorType"`
}

// maxMessage caps the outcome message taken from a function's answer.
const maxMessage = 1000

// outcome maps a synchronous invoke's answer onto a run outcome.
func outcome(out *awslambda.InvokeOutput) targets.Outcome {
	if fe := aws.ToString(out.FunctionError); fe != "" {
		var e functionError
		if err := json.Unmarshal(out.Payload, &e); err != nil || e.ErrorMessage == "" {
			e.ErrorMessage = truncate(string(out.Payload))
		}
		if strings.Contains(e.ErrorMessage, "Task timed out after") || e.ErrorType == "Sandbox.Timedout" {
			return targets.Outcome{State: kind.RunTimedOut, Code: 502,
				Message: truncate("the function timed out (its own Lambda timeout): " + e.ErrorMessage)}
		}
		msg := e.ErrorMessage
		if e.ErrorType != "" {
			msg = e.ErrorType + ": " + msg
		}
		return targets.Outcome{State: kind.RunFailed, Code: 500, Message: truncate("function error (" + fe + "): " + msg)}
	}
	// A jobfn function answers {"ok":true,"result":...,"log":[...]}; keep
	// the result. Any other answer is summarized as it is.
	var resp struct {
		OK     *bool           `json:"ok"`
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	}
	summary := strings.TrimSpace(string(out.Payload))
	if json.Unmarshal(out.Payload, &resp) == nil && resp.OK != nil {
		if !*resp.OK {
			return targets.Outcome{State: kind.RunFailed, Code: 500, Message: truncate("the function answered ok=false: " + resp.Error)}
		}
		summary = strings.TrimSpace(string(resp.Result))
	}
	if summary == "" || summary == "null" {
		summary = "ok"
	}
	return targets.Outcome{State: kind.RunSucceeded, Code: 200, Message: truncate(summary)}
}

func truncate(s string) string {
	return targets.CleanMessage(s, maxMessage) // the function's text: cut, without control characters
}
