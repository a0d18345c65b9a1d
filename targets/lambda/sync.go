package lambda

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/targets"
)

// syncRun is a synchronous invoke in flight.
type syncRun struct {
	req    targets.Request
	t      target
	cancel context.CancelCauseFunc
}

// runSync accepts a run for a RequestResponse invoke and starts the
// goroutine that waits for it. The function's existence is checked first
// (GetFunction, cached), so that a missing function is a dispatch error.
func (d *Driver) runSync(ctx context.Context, t target, req targets.Request) (targets.Dispatch, error) {
	if err := d.check(ctx, t); errors.Is(err, targets.ErrUnknownTarget) {
		return targets.Dispatch{}, err
	} else if err != nil {
		// Not being able to ask (say, no lambda:GetFunction permission) is
		// no reason not to try the invoke.
		d.log.WithError(err).WithField("target", req.Target).Debug("GetFunction failed; invoking anyway")
	}
	payload, err := d.payload(req, false)
	if err != nil {
		return targets.Dispatch{}, err
	}
	d.mu.Lock()
	dup, err := d.admit(req.RunID)
	if err != nil || dup {
		d.mu.Unlock()
		return dupDispatch(req, dup), err
	}
	ictx, cancel := context.WithCancelCause(d.ctx)
	s := &syncRun{req: req, t: t, cancel: cancel}
	d.syncs[req.RunID] = s
	d.wg.Add(1)
	d.mu.Unlock()

	go d.waitSync(ictx, s, payload)
	return targets.Dispatch{Message: "invoking Lambda function " + t.String() + " synchronously (RequestResponse)"}, nil
}

func dupDispatch(req targets.Request, dup bool) targets.Dispatch {
	if !dup {
		return targets.Dispatch{}
	}
	return targets.Dispatch{Message: fmt.Sprintf("run %d is already in flight on %s; duplicate dispatch ignored", req.RunID, req.Target)}
}

// slowInvokeLog is how long a synchronous invoke goes before the run's log
// says it was started.
const slowInvokeLog = time.Second

// waitSync invokes the function and reports the outcome: the log tail goes
// to the run's log, then the run is forgotten, then completed.
func (d *Driver) waitSync(ctx context.Context, s *syncRun, payload []byte) {
	defer d.wg.Done()
	req := s.req
	wait := d.cfg.MaxWait
	if req.Timeout > 0 && req.Timeout < wait {
		wait = req.Timeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, wait, errTimedOut)
	defer cancel()
	defer s.cancel(nil)

	// The first line goes to the run's log at once only when the answer
	// is slow to come (someone may be watching); otherwise it is written
	// with the answer's lines, one log write per run.
	// Concatenation, not fmt: this and the answer line are per fire.
	invoking := "[ringjob] invoking Lambda function " + s.t.String() + " (RequestResponse, waiting up to " + wait.String() + ")\n"
	var logMu sync.Mutex
	logged := false
	slow := d.clock.AfterFunc(slowInvokeLog, func() {
		logMu.Lock()
		defer logMu.Unlock()
		if !logged {
			logged = true
			d.appendLog(req.RunID, invoking)
		}
	})
	start := d.clock.Now()
	out, reqID, err := d.invoke(ctx, s.t, invokeInput(s.t, types.InvocationTypeRequestResponse, payload))
	took := d.clock.Since(start).Round(time.Millisecond)
	slow.Stop()

	var res targets.Outcome
	var lines strings.Builder
	logMu.Lock()
	if !logged {
		logged = true
		lines.WriteString(invoking)
	}
	logMu.Unlock()
	switch cause := context.Cause(ctx); {
	case err == nil:
		if tail, derr := base64.StdEncoding.DecodeString(aws.ToString(out.LogResult)); derr == nil && len(tail) > 0 {
			lines.Write(tail)
			if tail[len(tail)-1] != '\n' {
				lines.WriteByte('\n')
			}
		}
		res = outcome(out)
		lines.WriteString("[ringjob] Lambda answered in " + took.String() + " (request id " + reqID + ", version " + aws.ToString(out.ExecutedVersion) + "): " + string(res.State) + "\n")
	case errors.Is(cause, errKilled):
		res = targets.Outcome{State: kind.RunKilled, Code: 500, Message: KilledMessage}
		fmt.Fprintf(&lines, "[ringjob] killed after %s: %s\n", took, KilledMessage)
	case errors.Is(cause, errTimedOut):
		res = targets.Outcome{State: kind.RunTimedOut, Code: 502, Message: fmt.Sprintf(
			"no answer from Lambda within %s; Ringjob stopped waiting (the invocation runs on until the function's own timeout)", wait)}
		fmt.Fprintf(&lines, "[ringjob] timed out: %s\n", res.Message)
	case errors.Is(cause, errClosing):
		res = targets.Outcome{State: kind.RunFailed, Code: 500, Message: "the scheduler shut down while waiting for Lambda; the invocation may still be running there (use Event mode for long functions)"}
		fmt.Fprintf(&lines, "[ringjob] %s\n", res.Message)
	default:
		res = targets.Outcome{State: kind.RunFailed, Code: 500, Message: truncate(err.Error())}
		fmt.Fprintf(&lines, "[ringjob] invoke failed after %s: %v\n", took, err)
	}
	d.appendLog(req.RunID, lines.String())
	d.mu.Lock()
	delete(d.syncs, req.RunID)
	d.mu.Unlock()
	d.complete(req.RunID, res)
}
