package schedule

import (
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // IANA zones work on machines without /usr/share/zoneinfo.
)

// Kind is a job's schedule type, stored as the job's schedule_type.
type Kind string

// The schedule types.
const (
	// KindNone never fires; the job runs only by hand, by API or as a child job.
	KindNone Kind = "none"
	// KindCron fires on a six-field cron expression with seconds, in the job's time zone.
	KindCron Kind = "cron"
	// KindFixedRate fires every N seconds, counted from the previous fire time.
	KindFixedRate Kind = "fixed_rate"
	// KindAt fires once, at a given instant.
	KindAt Kind = "at"
)

// Kinds lists the valid schedule types in the order the console shows them.
var Kinds = []Kind{KindNone, KindCron, KindFixedRate, KindAt}

// MaxPreview caps how many fire times Preview returns.
const MaxPreview = 1000

// Schedule is pure: no side effects, safe for concurrent use.
type Schedule interface {
	// Next returns the first fire time strictly after `after`, and false when
	// the schedule has no more fires. Fire times are whole seconds.
	Next(after time.Time) (time.Time, bool)
}

// Parse validates and compiles a schedule. tz is an IANA zone name ("" = UTC).
// Errors name what was wrong and how to fix it, e.g.
// `cron "0 0 25 * * ?": hour 25 is out of range 0-23 (fields: sec min hour day-of-month month day-of-week [year])`.
// Every error is a *ParseError and matches ErrInvalid.
func Parse(kind Kind, conf string, tz string) (Schedule, error) {
	loc, err := LoadZone(tz)
	if err != nil {
		return nil, err
	}
	return parseIn(kind, conf, loc)
}

// Zones parses schedules loading each time zone once (LoadZone reads the
// zone's file every time): what a check of thousands of schedules in one go
// uses. The zero value is ready; it is not safe for concurrent use.
type Zones struct {
	loaded map[string]zoneLoad
}

type zoneLoad struct {
	loc *time.Location
	err error
}

// Parse is the package's Parse, with the zone loaded once per Zones.
func (z *Zones) Parse(kind Kind, conf string, tz string) (Schedule, error) {
	if z.loaded == nil {
		z.loaded = map[string]zoneLoad{}
	}
	l, ok := z.loaded[tz]
	if !ok {
		l.loc, l.err = LoadZone(tz)
		z.loaded[tz] = l
	}
	if l.err != nil {
		return nil, l.err
	}
	return parseIn(kind, conf, l.loc)
}

func parseIn(kind Kind, conf string, loc *time.Location) (Schedule, error) {
	switch kind {
	case KindNone:
		if strings.TrimSpace(conf) != "" {
			return nil, confError("schedule type none takes no schedule_conf, got %q; clear it, or pick cron, fixed_rate or at", conf)
		}
		return none{}, nil
	case KindCron:
		return parseCron(conf, loc)
	case KindFixedRate:
		return parseFixedRate(conf)
	case KindAt:
		return parseAt(conf, loc)
	default:
		return nil, &ParseError{
			Field: FieldType,
			Msg:   fmt.Sprintf("schedule_type %q is unknown; use one of none, cron, fixed_rate, at", string(kind)),
		}
	}
}

// LoadZone loads an IANA time zone by name; "" and "UTC" give UTC. "Local" is
// rejected because it would make a job's schedule depend on the machine.
func LoadZone(tz string) (*time.Location, error) {
	if tz == "" {
		return time.UTC, nil
	}
	if tz == "Local" {
		return nil, &ParseError{
			Field: FieldTimeZone,
			Msg:   `time_zone "Local" depends on the machine; use an IANA name such as "Europe/Berlin", or "" for UTC`,
		}
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, &ParseError{
			Field: FieldTimeZone,
			Msg:   fmt.Sprintf("time_zone %q is not a known IANA time zone; use a name such as \"Europe/Berlin\" or \"America/New_York\", or \"\" for UTC", tz),
			Err:   err,
		}
	}
	return loc, nil
}

// Preview returns up to n fire times after `after` (for the API's next-fires
// preview). n is capped at MaxPreview; a nil schedule has no fires.
func Preview(s Schedule, after time.Time, n int) []time.Time {
	if s == nil || n <= 0 {
		return nil
	}
	n = min(n, MaxPreview)
	out := make([]time.Time, 0, min(n, 16))
	t := after
	for len(out) < n {
		next, ok := s.Next(t)
		if !ok {
			break
		}
		out = append(out, next)
		t = next
	}
	return out
}

// none never fires.
type none struct{}

// Next always reports no fire.
func (none) Next(time.Time) (time.Time, bool) { return time.Time{}, false }

func confError(format string, args ...any) *ParseError {
	return &ParseError{Field: FieldConf, Msg: fmt.Sprintf(format, args...)}
}

// ceilSecond rounds t up to a whole second (and drops any monotonic clock reading).
func ceilSecond(t time.Time) time.Time {
	tr := t.Truncate(time.Second)
	if tr.Before(t) {
		tr = tr.Add(time.Second)
	}
	return tr
}
