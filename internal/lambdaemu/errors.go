package lambdaemu

import "errors"

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("lambdaemu: emulator is closed")

// errThrottled means no process slot (and no queue place) was free.
var errThrottled = errors.New("rate exceeded")

// errStopping means the emulator is closing.
var errStopping = errors.New("the Lambda emulator is shutting down")
