package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Local layouts accepted for at, read on the wall clock of the job's time zone.
var atLocalLayouts = []string{"2006-01-02 15:04:05", "2006-01-02T15:04:05"}

// at fires once.
type at struct {
	when time.Time // whole second
}

func parseAt(conf string, loc *time.Location) (Schedule, error) {
	s := strings.TrimSpace(conf)
	if inner, ok := cutCall(s, "at"); ok {
		s = inner // EventBridge's at(yyyy-mm-ddThh:mm:ss), read in the job's time zone
	}
	const how = `use RFC 3339 with an offset, e.g. "2026-12-01T02:00:00+01:00", or a local time "2026-12-01 02:00:00" read in the job's time_zone`
	if s == "" {
		return nil, confError("at needs a time; %s", how)
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return at{when: ceilSecond(t).In(loc)}, nil
	} else if hasZone(s) {
		return nil, atError(s, how, err)
	}
	layout := atLocalLayouts[0]
	if len(s) > 10 && s[10] == 'T' {
		layout = atLocalLayouts[1]
	}
	naive, err := time.Parse(layout, s)
	if err != nil {
		return nil, atError(s, how, err)
	}
	// A local time in a DST gap fires when the gap ends; a repeated one at
	// its first occurrence, as for cron.
	return at{when: ceilSecond(resolveWall(naive, loc).at)}, nil
}

// Next returns the instant if it is strictly after `after`.
func (a at) Next(after time.Time) (time.Time, bool) {
	if a.when.After(after) {
		return a.when, true
	}
	return time.Time{}, false
}

// hasZone reports whether s ends in an RFC 3339 offset ("Z", "+01:00").
func hasZone(s string) bool {
	if len(s) <= len("2006-01-02T15:04:05") {
		return false
	}
	tail := s[len("2006-01-02T15:04:05"):]
	return strings.HasSuffix(strings.ToUpper(tail), "Z") || strings.ContainsAny(tail, "+-")
}

func atError(s, how string, err error) *ParseError {
	reason := err.Error()
	var pe *time.ParseError
	if errors.As(err, &pe) {
		switch {
		case pe.Message != "":
			reason = strings.TrimPrefix(pe.Message, ": ")
		case pe.ValueElem == "":
			reason = "it is incomplete"
		default:
			reason = fmt.Sprintf("cannot read %q", pe.ValueElem)
		}
	}
	return &ParseError{Field: FieldConf, Msg: fmt.Sprintf("at %q is not a valid time: %s; %s", s, reason, how), Err: err}
}
