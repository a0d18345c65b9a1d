package service

import (
	"errors"
	"fmt"

	"github.com/ringjob/ringjob/internal/servicekit"
)

// The errors every service layer shares (see servicekit): the API maps them
// to statuses whichever layer returned them.
type (
	ValidationError   = servicekit.ValidationError
	NotFoundError     = servicekit.NotFoundError
	ConflictError     = servicekit.ConflictError
	PreconditionError = servicekit.PreconditionError
)

func invalid(field, format string, args ...any) *ValidationError {
	return servicekit.Invalid(field, format, args...)
}

// KeyReusedError reports an Idempotency-Key that an earlier request with a
// different body used. The REST API answers it with 422.
type KeyReusedError struct {
	Key string
}

// Error says what to do.
func (e *KeyReusedError) Error() string {
	return fmt.Sprintf("Idempotency-Key %q was already used for a request with a different body; use a new key for a new request", e.Key)
}

// TargetError reports that a run's target driver could not do what was asked
// (kill a run, read its log): the target is unreachable or refused. The REST
// API answers it with 502.
type TargetError struct {
	Target string
	Op     string // "kill", "read log"
	Err    error
}

// Error names the target and the operation.
func (e *TargetError) Error() string {
	return fmt.Sprintf("%s on target %s failed: %v", e.Op, e.Target, e.Err)
}

// Unwrap returns the driver's error.
func (e *TargetError) Unwrap() error { return e.Err }

// ErrNoScheduler is returned by operations that need a running scheduler
// (trigger) when the service was built without one. The REST API answers it
// with 503.
var ErrNoScheduler = errors.New("this server runs without a scheduler, so it cannot trigger jobs")

// notFoundOr turns a store.ErrNotFound into a *NotFoundError and wraps other
// errors with what was being done (servicekit.NotFoundOr).
func notFoundOr(err error, resource string, id int64, doing string) error {
	return servicekit.NotFoundOr(err, resource, id, doing)
}
