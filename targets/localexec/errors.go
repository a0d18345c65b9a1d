//go:build unix

package localexec

import "errors"

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("local target driver is closed")

// ErrConcurrencyLimit is returned by Run when the command already runs
// Command.MaxConcurrency processes. The error also wraps targets.ErrBusy, so
// routing can move on to another target.
var ErrConcurrencyLimit = errors.New("command is at its concurrency limit")
