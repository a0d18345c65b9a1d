package schedule

import "errors"

// ErrInvalid matches every error Parse returns: errors.Is(err, ErrInvalid)
// tells the caller the input was wrong (an HTTP 400), not the system.
var ErrInvalid = errors.New("invalid schedule")

// Field names used in ParseError.Field. They match the job's columns and API fields.
const (
	FieldType     = "schedule_type"
	FieldConf     = "schedule_conf"
	FieldTimeZone = "time_zone"
	// The window fields (Window, CheckFlexMinutes, CheckActive).
	FieldFlexWindow  = "flexible_window_min"
	FieldActiveUntil = "active_until"
)

// ParseError reports why a schedule was rejected. Its message says what was
// wrong and how to fix it; Field names the job field at fault so an API can
// point at it.
type ParseError struct {
	// Field is one of the Field constants.
	Field string
	// Msg is the full, user-facing message.
	Msg string
	// Err is the underlying cause, if any (for example from time.LoadLocation).
	Err error
}

// Error returns the user-facing message.
func (e *ParseError) Error() string { return e.Msg }

// Unwrap returns the underlying cause, if any.
func (e *ParseError) Unwrap() error { return e.Err }

// Is reports whether target is ErrInvalid.
func (e *ParseError) Is(target error) bool { return target == ErrInvalid }
