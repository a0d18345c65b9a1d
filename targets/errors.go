package targets

import "errors"

// ErrUnknownScheme is returned when no driver is registered for a target's scheme.
var ErrUnknownScheme = errors.New("no target driver for scheme")

// ErrUnknownTarget is returned when a target names something the driver does
// not know (for example a local command that is not declared in the config).
var ErrUnknownTarget = errors.New("unknown target")

// ErrBusy is returned by IdleBeat when the target is running the job or has it queued.
var ErrBusy = errors.New("target is busy")
