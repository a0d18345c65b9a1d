package lambda

import "errors"

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("lambda target driver is closed")

// ErrEventModeUnconfigured is returned for an Event-mode target when the
// driver has no CallbackURL or RunToken.
var ErrEventModeUnconfigured = errors.New("event mode needs the driver's CallbackURL and RunToken (functions report outcomes through the callback)")

// Causes of a synchronous invoke's context ending.
var (
	errKilled   = errors.New("killed by request")
	errTimedOut = errors.New("job timeout passed")
	errClosing  = errors.New("the lambda target driver shut down")
)
