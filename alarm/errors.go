package alarm

import (
	"errors"
	"fmt"
)

// ErrInvalidEvent is wrapped when an Event cannot be rendered (unknown kind,
// no job).
var ErrInvalidEvent = errors.New("invalid alarm event")

// ErrUnknownChannel is recorded when a job names an alarm channel that the
// dispatcher has no sender for; it is not retried.
var ErrUnknownChannel = errors.New("unknown alarm channel")

// ErrStopped is recorded for alarms the dispatcher gave up on because it was
// stopped before they were delivered.
var ErrStopped = errors.New("alarm dispatcher stopped before the alarm was delivered")

// ErrInvalidConfig is wrapped by every Validate error.
var ErrInvalidConfig = errors.New("invalid alarm config")

// HTTPError is a chat or webhook endpoint's answer that was not a success:
// a non-2xx status, or a 2xx whose JSON says the robot refused the message
// (DingTalk and WeCom errcode, Feishu code). It never holds the endpoint's
// secret URL.
type HTTPError struct {
	Channel string // the sender's name
	Kind    string // slack, dingtalk, ...
	URL     string // the endpoint, redacted
	Status  int    // HTTP status
	Code    int    // the robot's error code when Status is 2xx
	Body    string // an excerpt of the response body (secrets removed)
}

func (e *HTTPError) Error() string {
	if e.Status >= 200 && e.Status < 300 {
		return fmt.Sprintf("%s channel %q: POST %s: HTTP %d but the robot refused the message: code %d: %s", e.Kind, e.Channel, e.URL, e.Status, e.Code, e.Body)
	}
	return fmt.Sprintf("%s channel %q: POST %s: HTTP %d: %s", e.Kind, e.Channel, e.URL, e.Status, e.Body)
}

// permanentError marks an error that a retry cannot fix.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent marks err as one that a retry cannot fix (a 4xx other than 408
// and 429, a rejected address, an invalid event); the dispatcher then gives
// up on that channel at once. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil || IsPermanent(err) {
		return err
	}
	return permanentError{err}
}

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// redactedError is an error whose message had secrets removed. Unwrap keeps
// errors.Is and errors.As working (context.DeadlineExceeded, *HTTPError);
// the wrapped error's own text may still hold a secret, so print this one.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
