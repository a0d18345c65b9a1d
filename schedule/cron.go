package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// cronParser compiles the normalised six-field expression once validate has
// accepted it. Its schedules are evaluated on naive wall clocks (in UTC), so
// robfig's own time zone and DST handling is never used.
var cronParser = cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

const cronFieldsHelp = "(fields: sec min hour day-of-month month day-of-week)"

// Positions of the six fields.
const (
	fieldSecond = iota
	fieldMinute
	fieldHour
	fieldDom
	fieldMonth
	fieldDow
)

type cronField struct {
	pos       int // fieldSecond ... fieldDow
	name      string
	min, max  int
	names     map[string]int // upper case
	namesHelp string
}

var cronFields = [6]cronField{
	{pos: fieldSecond, name: "second", min: 0, max: 59},
	{pos: fieldMinute, name: "minute", min: 0, max: 59},
	{pos: fieldHour, name: "hour", min: 0, max: 23},
	{pos: fieldDom, name: "day-of-month", min: 1, max: 31},
	{pos: fieldMonth, name: "month", min: 1, max: 12, namesHelp: "JAN-DEC", names: map[string]int{
		"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6,
		"JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12,
	}},
	{pos: fieldDow, name: "day-of-week", min: 0, max: 6, namesHelp: "SUN-SAT", names: map[string]int{
		"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6,
	}},
}

// descriptors are the robfig shorthands we accept, as six-field expressions.
var descriptors = map[string]string{
	"@yearly":   "0 0 0 1 1 ?",
	"@annually": "0 0 0 1 1 ?",
	"@monthly":  "0 0 0 1 * ?",
	"@weekly":   "0 0 0 ? * SUN",
	"@daily":    "0 0 0 * * ?",
	"@midnight": "0 0 0 * * ?",
	"@hourly":   "0 0 * * * ?",
}

// daysInMonth is the longest each month gets (February in leap years).
var daysInMonth = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// maxSkips bounds the candidates Next discards before giving up; each skip
// jumps past a whole zone period or past `after`, so a handful is plenty.
const maxSkips = 64

// cronSchedule fires on a cron expression read on the wall clock of loc.
type cronSchedule struct {
	expr string             // normalised six-field expression
	spec *cron.SpecSchedule // evaluated on naive wall clocks
	loc  *time.Location
}

// String returns the normalised six-field expression.
func (c *cronSchedule) String() string { return c.expr }

// Next returns the first fire strictly after `after`; see doc.go for the DST rules.
func (c *cronSchedule) Next(after time.Time) (time.Time, bool) {
	// Every wall time up to after's own wall clock maps to an instant no later
	// than after (the mapping never decreases), so the search starts there.
	x := wallClock(after, c.loc)
	for range maxSkips {
		w, ok := c.nextWall(x)
		if !ok {
			return time.Time{}, false
		}
		r := resolveWall(w, c.loc)
		if r.at.After(after) {
			return r.at, true
		}
		// w is a repeated wall time whose first occurrence is already past
		// (after lies in the second occurrence). Every wall time that maps into
		// the same zone period before min(after, period end) is past too: jump
		// over them.
		last := after
		if !r.end.IsZero() && !last.Before(r.end) {
			last = r.end.Add(-time.Nanosecond)
		}
		x = last.Add(r.offset).UTC()
		if x.Before(w) {
			x = w
		}
	}
	return time.Time{}, false
}

// nextWall returns the first naive wall time strictly after x that matches.
// robfig gives up after five years; one retry covers the eight-year gap
// between some 29 Februaries.
func (c *cronSchedule) nextWall(x time.Time) (time.Time, bool) {
	for range 2 {
		if w := c.spec.Next(x); !w.IsZero() {
			return w, true
		}
		x = time.Date(x.Year()+5, time.December, 31, 23, 59, 59, 0, time.UTC)
	}
	return time.Time{}, false
}

func parseCron(conf string, loc *time.Location) (Schedule, error) {
	expr := strings.TrimSpace(conf)
	fields, err := cronSplit(expr)
	if err != nil {
		return nil, err
	}
	var masks [6]uint64
	for i, f := range cronFields {
		m, msg := f.parse(fields[i])
		if msg != "" {
			return nil, cronError(expr, "%s", msg)
		}
		masks[i] = m
	}
	domWild := isWildcard(fields[fieldDom])
	dowWild := isWildcard(fields[fieldDow])
	if !domWild && !dowWild {
		return nil, cronError(expr, "day-of-month %q and day-of-week %q are both set, but only one may be; set the other to ?, e.g. \"0 0 2 ? * MON\" or \"0 0 2 1 * ?\"",
			fields[fieldDom], fields[fieldDow])
	}
	if dowWild && !dateOccurs(masks[fieldDom], masks[fieldMonth]) {
		return nil, cronError(expr, "day-of-month %q never occurs in month %q, so the expression would never fire; pick days that exist in those months",
			fields[fieldDom], fields[fieldMonth])
	}
	norm := strings.Join(fields[:], " ")
	parsed, perr := cronParser.Parse(norm)
	if perr != nil {
		return nil, &ParseError{Field: FieldConf, Msg: fmt.Sprintf("cron %q: %v %s", expr, perr, cronFieldsHelp), Err: perr}
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, cronError(expr, "compiled to an unexpected %T", parsed)
	}
	naive := *spec
	naive.Location = time.UTC
	return &cronSchedule{expr: norm, spec: &naive, loc: loc}, nil
}

// cronSplit checks the shape of the expression and returns its six fields.
func cronSplit(expr string) ([6]string, error) {
	var out [6]string
	if expr == "" {
		return out, confError("cron expression is empty; write six fields with seconds first, e.g. \"0 0 2 * * ?\" for 02:00:00 every day %s", cronFieldsHelp)
	}
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return out, cronError(expr, "a TZ= prefix is not accepted; remove it and set the job's time_zone field instead")
	}
	if strings.HasPrefix(expr, "@") {
		d := strings.ToLower(expr)
		if six, ok := descriptors[d]; ok {
			return cronSplit(six)
		}
		if strings.HasPrefix(d, "@every") {
			return out, cronError(expr, "@every is not accepted; use schedule type fixed_rate with a number of seconds")
		}
		return out, cronError(expr, "unknown descriptor; use @yearly, @monthly, @weekly, @daily, @hourly or six fields")
	}
	fields := strings.Fields(expr)
	switch n := len(fields); {
	case n == 5:
		return out, cronError(expr, "has 5 fields, but six are required with seconds first; to fire at second 0 prefix \"0 \": %q", "0 "+strings.Join(fields, " "))
	case n == 7:
		if fields[6] != "*" {
			return out, cronError(expr, "year %q is not supported; the optional 7th field (year) may only be *; for a single date use schedule type at", fields[6])
		}
		fields = fields[:6]
	case n != 6:
		plural := "s"
		if n == 1 {
			plural = ""
		}
		return out, cronError(expr, "has %d field%s, but six are required with seconds first, e.g. \"0 0 2 * * ?\"", n, plural)
	}
	copy(out[:], fields)
	return out, nil
}

// parse validates one field and returns the set of values it matches as a
// bit mask, or a message saying what is wrong.
func (f cronField) parse(text string) (uint64, string) {
	if text == "?" {
		if f.pos != fieldDom && f.pos != fieldDow {
			return 0, fmt.Sprintf("? is only allowed in day-of-month and day-of-week; use * in %s", f.name)
		}
		return f.span(f.min, f.max, 1), ""
	}
	var mask uint64
	for item := range strings.SplitSeq(text, ",") {
		if item == "?" {
			return 0, fmt.Sprintf("%s %q: ? must stand alone in its field", f.name, text)
		}
		m, msg := f.parseItem(item)
		if msg != "" {
			return 0, msg
		}
		mask |= m
	}
	return mask, ""
}

func (f cronField) parseItem(item string) (uint64, string) {
	if item == "" {
		return 0, fmt.Sprintf("%s has an empty item in its comma list", f.name)
	}
	if msg := f.unsupported(item); msg != "" {
		return 0, msg
	}
	rng, stepText, hasStep := strings.Cut(item, "/")
	if strings.Contains(stepText, "/") {
		return 0, fmt.Sprintf("%s %q has more than one /", f.name, item)
	}
	var lo, hi int
	switch {
	case rng == "*":
		lo, hi = f.min, f.max
	case rng == "?":
		return 0, fmt.Sprintf("%s %q: ? cannot take a step; use */N", f.name, item)
	default:
		a, b, isRange := strings.Cut(rng, "-")
		var msg string
		if lo, msg = f.value(a, item); msg != "" {
			return 0, msg
		}
		switch {
		case isRange:
			if strings.Contains(b, "-") {
				return 0, fmt.Sprintf("%s %q has more than one -", f.name, item)
			}
			if hi, msg = f.value(b, item); msg != "" {
				return 0, msg
			}
			if hi < lo {
				return 0, fmt.Sprintf("%s range %q runs backwards; ranges may not wrap, split it, e.g. %d-%d,%d-%d", f.name, rng, lo, f.max, f.min, hi)
			}
		case hasStep: // "5/15" means from 5 to the end, every 15
			hi = f.max
		default:
			hi = lo
		}
	}
	step := 1
	if hasStep {
		spanLen := f.max - f.min + 1
		n, err := strconv.Atoi(stepText)
		if err != nil || n < 1 || n > spanLen || !isDigits(stepText) {
			return 0, fmt.Sprintf("%s step %q in %q must be a whole number from 1 to %d", f.name, stepText, item, spanLen)
		}
		step = n
	}
	return f.span(lo, hi, step), ""
}

// value parses one number or name of the field.
func (f cronField) value(s, item string) (int, string) {
	if s == "" {
		return 0, fmt.Sprintf("%s %q is missing a number (negative numbers are not allowed)", f.name, item)
	}
	if v, ok := f.names[strings.ToUpper(s)]; ok {
		return v, ""
	}
	if !isDigits(s) {
		if f.names != nil {
			return 0, fmt.Sprintf("%s %q is not a number or a name (%s)", f.name, s, f.namesHelp)
		}
		return 0, fmt.Sprintf("%s %q is not a number", f.name, s)
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < f.min || v > f.max {
		msg := fmt.Sprintf("%s %s is out of range %d-%d", f.name, s, f.min, f.max)
		if f.pos == fieldDow {
			msg += " (0=SUN ... 6=SAT, not Quartz's 1=SUN ... 7=SAT; names such as MON-FRI avoid the confusion)"
		}
		return 0, msg
	}
	return v, ""
}

// unsupported reports the Quartz extensions we do not implement.
func (f cronField) unsupported(item string) string {
	const tail = "is not supported; Ringjob cron has no L, W or #, list the days explicitly"
	up := strings.ToUpper(item)
	if strings.Contains(up, "#") {
		return fmt.Sprintf("%s %q: # (nth weekday of the month) %s", f.name, item, tail)
	}
	switch f.pos {
	case fieldDom:
		switch {
		case strings.Contains(up, "L") && strings.Contains(up, "W"):
			return fmt.Sprintf("%s %q: LW (last weekday of the month) %s", f.name, item, tail)
		case strings.Contains(up, "L"):
			return fmt.Sprintf("%s %q: L (last day of the month) %s", f.name, item, tail)
		case strings.Contains(up, "W"):
			return fmt.Sprintf("%s %q: W (nearest weekday) %s", f.name, item, tail)
		}
	case fieldDow:
		if base, ok := strings.CutSuffix(up, "L"); ok {
			if _, isName := f.names[up]; !isName {
				if _, msg := f.value(base, item); msg == "" || base == "" {
					return fmt.Sprintf("%s %q: L (last given weekday of the month) %s", f.name, item, tail)
				}
			}
		}
	}
	return ""
}

// span returns the bits lo, lo+step, ... up to hi.
func (f cronField) span(lo, hi, step int) uint64 {
	var m uint64
	for v := lo; v <= hi; v += step {
		m |= 1 << uint(v)
	}
	return m
}

func isWildcard(field string) bool { return field == "*" || field == "?" }

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// dateOccurs reports whether some month in months has some day in days.
func dateOccurs(days, months uint64) bool {
	for m := 1; m <= 12; m++ {
		if months&(1<<uint(m)) == 0 {
			continue
		}
		for d := 1; d <= daysInMonth[m]; d++ {
			if days&(1<<uint(d)) != 0 {
				return true
			}
		}
	}
	return false
}

func cronError(expr, format string, args ...any) *ParseError {
	return confError("cron %q: %s %s", expr, fmt.Sprintf(format, args...), cronFieldsHelp)
}
