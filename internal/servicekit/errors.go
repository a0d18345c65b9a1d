package servicekit

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ringjob/ringjob/store"
)

// ValidationError reports input a service refuses. Field names the input
// field at fault in its API spelling ("schedule_conf", "members[1]",
// "Idempotency-Key"); Message says what was wrong and how to fix it. The REST
// API answers it with 400 invalid_argument.
type ValidationError struct {
	Field   string
	Message string
}

// Error returns "field: message", or the message alone when it already
// starts with the field's name.
func (e *ValidationError) Error() string {
	if e.Field == "" || strings.HasPrefix(e.Message, e.Field) {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// Invalid is a *ValidationError of field with a formatted message.
func Invalid(field, format string, args ...any) *ValidationError {
	return &ValidationError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// NotFoundError reports that a resource asked for by id does not exist. It
// matches store.ErrNotFound with errors.Is. The REST API answers it with 404.
type NotFoundError struct {
	Resource string // "group", "job", "run"
	ID       int64
	// Name is set instead of ID for a lookup by name ("app_name/job_name").
	Name string
	// Hint, when set, follows the message: what does exist, what to do.
	Hint string
}

// Error says which resource is missing.
func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("%s %d does not exist", e.Resource, e.ID)
	if e.Name != "" {
		msg = fmt.Sprintf("%s %s does not exist", e.Resource, e.Name)
	}
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// Is makes errors.Is(err, store.ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == store.ErrNotFound }

// ConflictError reports a request that is valid but clashes with the current
// state (a taken app name, a group that still has jobs, a run that already
// finished). It matches store.ErrConflict. The REST API answers it with 409.
type ConflictError struct {
	Field   string // the input field at fault, if one is
	Message string
}

// Error returns the message.
func (e *ConflictError) Error() string { return e.Message }

// Is makes errors.Is(err, store.ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == store.ErrConflict }

// PreconditionError reports a conditional write (If-Match) refused because
// the object changed since the caller read it; nothing was written.
type PreconditionError struct {
	Resource string
	ID       int64
	Version  int64 // the current version when known, else 0
}

func (e *PreconditionError) Error() string {
	return fmt.Sprintf("%s %d changed since you read it; read it again, reapply your change and retry", e.Resource, e.ID)
}

// Is makes errors.Is(err, store.ErrVersionMismatch) true.
func (e *PreconditionError) Is(target error) bool { return target == store.ErrVersionMismatch }

// NotFoundOr turns a store.ErrNotFound into a *NotFoundError (and a
// store.ErrVersionMismatch into a *PreconditionError) and wraps other errors
// with what was being done; nil stays nil.
func NotFoundOr(err error, resource string, id int64, doing string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, store.ErrNotFound) {
		return &NotFoundError{Resource: resource, ID: id}
	}
	if errors.Is(err, store.ErrVersionMismatch) {
		return &PreconditionError{Resource: resource, ID: id}
	}
	return fmt.Errorf("%s: %w", doing, err)
}
