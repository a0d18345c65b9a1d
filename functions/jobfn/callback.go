package jobfn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/ringjob/ringjob/internal/xxlwire"
)

// RunTokenHeader carries the run's callback token (Trigger.CallbackToken).
const RunTokenHeader = xxlwire.HeaderRunToken

// Handle codes of the XXL-JOB callback.
const (
	HandleCodeSuccess = xxlwire.CodeSuccess
	HandleCodeFail    = xxlwire.CodeFail
)

// CallbackItem is one entry of an XXL-JOB callback: logId, the log date
// (under both spellings, logDateTim and logDateTime), handleCode, handleMsg,
// and Log, a Ringjob extension with the run's collected log lines, which the
// server appends to the run's log (XXL-JOB admins ignore it).
type CallbackItem = xxlwire.CallbackItem

// Callback is the body POSTed to Trigger.CallbackURL (the XXL-JOB 3.5 shape,
// {"callbackList":[...]}).
type Callback = xxlwire.CallbackList

func newCallback(t Trigger, res any, err error, lines []string) Callback {
	at := t.ScheduledAt
	if at.IsZero() {
		at = time.Now()
	}
	code := HandleCodeSuccess
	if err != nil {
		code = HandleCodeFail
	}
	item := xxlwire.NewCallbackItem(t.RunID, at.UnixMilli(), code, summary(res, err))
	item.Log = lines
	return Callback{CallbackList: []CallbackItem{item}}
}

// send posts the callback, trying o.attempts times with doubling pauses,
// within the invocation's deadline.
func (o options) send(ctx context.Context, t Trigger, cb Callback) error {
	data, err := json.Marshal(cb)
	if err != nil {
		return fmt.Errorf("encode callback: %w", err)
	}
	// The handler's own cancellation must not stop the report; Lambda's
	// deadline still bounds it.
	cctx := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		cctx, cancel = context.WithDeadline(cctx, dl)
		defer cancel()
	}
	delay := o.backoff
	var last error
	for attempt := 1; ; attempt++ {
		if last = o.post(cctx, t, data); last == nil {
			return nil
		}
		if attempt >= o.attempts {
			return fmt.Errorf("%d attempt(s): %w", attempt, last)
		}
		timer := time.NewTimer(delay)
		select {
		case <-timer.C:
		case <-cctx.Done():
			timer.Stop()
			return fmt.Errorf("%d attempt(s), then the invocation's deadline passed: %w", attempt, last)
		}
		delay *= 2
	}
}

// post sends one callback and checks the XXL-JOB answer {"code":200,...}.
func (o options) post(ctx context.Context, t Trigger, data []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.CallbackURL, bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("callback_url %q: %w", t.CallbackURL, err)
	}
	req.Header.Set("Content-Type", xxlwire.RequestContentType)
	req.Header.Set(RunTokenHeader, t.CallbackToken)
	resp, err := o.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return fmt.Errorf("read the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	}
	var env xxlwire.Envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("answer is not an XXL-JOB response: %q", body)
	}
	if env.Code != HandleCodeSuccess {
		return errors.New("refused: code " + fmt.Sprint(env.Code) + ": " + env.Msg)
	}
	return nil
}
