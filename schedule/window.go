package schedule

import (
	"fmt"
	"hash/fnv"
	"time"
)

// Bounds of a flexible window, in minutes (EventBridge's FlexibleTimeWindow).
const (
	MinFlexMinutes = 1
	MaxFlexMinutes = 1440
)

// Window is when a job may fire: only at schedule times within [Start, End]
// (a zero bound is open), each fire moved Offset later, Offset being less
// than the job's flexible window (FlexOffset).
type Window struct {
	Start, End time.Time
	Offset     time.Duration
}

// FlexOffset is where within a flexible window of `minutes` the job named
// key fires: whole seconds from 0 to minutes*60-1, the same on every
// replica and for every fire of the job (so its fires keep their order),
// and spread over the window across jobs, so that thousands of jobs due on
// the same second do not all fire on it. 0 without a window. The job's name
// is the key (not its id) because a job's first fire is computed before it
// has an id.
func FlexOffset(key string, minutes int) time.Duration {
	if minutes <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	return time.Duration(h.Sum64()%uint64(minutes*60)) * time.Second
}

// CheckFlexMinutes validates a flexible window (0 = off).
func CheckFlexMinutes(minutes int) error {
	if minutes != 0 && (minutes < MinFlexMinutes || minutes > MaxFlexMinutes) {
		return &ParseError{Field: FieldFlexWindow, Msg: fmt.Sprintf("flexible_window_min %d is out of range; use 0 (off) or 1 to 1440 minutes", minutes)}
	}
	return nil
}

// CheckActive validates an active window (zero bounds are open).
func CheckActive(start, end time.Time) error {
	if !start.IsZero() && !end.IsZero() && !end.After(start) {
		return &ParseError{Field: FieldActiveUntil, Msg: fmt.Sprintf("active_until %s is not after active_from %s; set a later end, or clear one of them",
			end.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339))}
	}
	return nil
}

// Bound returns s limited to w. Without bounds and offset it returns s.
func Bound(s Schedule, w Window) Schedule {
	if w.Start.IsZero() && w.End.IsZero() && w.Offset == 0 {
		return s
	}
	return bounded{s: s, w: w}
}

type bounded struct {
	s Schedule
	w Window
}

// Next returns the first schedule time t within [Start, End] with
// t+Offset strictly after `after`, moved by Offset.
func (b bounded) Next(after time.Time) (time.Time, bool) {
	from := after.Add(-b.w.Offset)
	if !b.w.Start.IsZero() && from.Before(b.w.Start) {
		from = b.w.Start.Add(-time.Nanosecond) // Next is strictly after: Start itself may fire
	}
	t, ok := b.s.Next(from)
	if !ok || (!b.w.End.IsZero() && t.After(b.w.End)) {
		return time.Time{}, false
	}
	return t.Add(b.w.Offset), true
}
