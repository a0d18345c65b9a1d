package schedule

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// This file parses the Quartz cron dialect (see doc.go) into a cronSpec;
// cronspec.go evaluates it. Values are held as bit masks: bit v set means the
// value v matches.

const cronFieldsHelp = "(fields: sec min hour day-of-month month day-of-week [year])"

// Positions of the seven fields.
const (
	fieldSecond = iota
	fieldMinute
	fieldHour
	fieldDom
	fieldMonth
	fieldDow
	fieldYear
)

// Year limits, as EventBridge and Quartz document them.
const (
	minYear = 1970
	maxYear = 2199
)

type cronField struct {
	pos       int // fieldSecond ... fieldYear
	name      string
	min, max  int
	names     map[string]int // upper case
	namesHelp string
}

var cronFields = [7]cronField{
	{pos: fieldSecond, name: "second", min: 0, max: 59},
	{pos: fieldMinute, name: "minute", min: 0, max: 59},
	{pos: fieldHour, name: "hour", min: 0, max: 23},
	{pos: fieldDom, name: "day-of-month", min: 1, max: 31},
	{pos: fieldMonth, name: "month", min: 1, max: 12, namesHelp: "JAN-DEC", names: map[string]int{
		"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6,
		"JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12,
	}},
	{pos: fieldDow, name: "day-of-week", min: 1, max: 7, namesHelp: "SUN-SAT", names: map[string]int{
		"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7,
	}},
	{pos: fieldYear, name: "year", min: minYear, max: maxYear},
}

// dowHelp explains the day-of-week numbers wherever one is rejected.
const dowHelp = "1=SUN, 2=MON ... 7=SAT, as in Quartz, XXL-JOB and EventBridge; names such as MON-FRI avoid any doubt"

// descriptors are the shorthands we accept, as six-field expressions.
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

// valueSet is a bit set of a field's values, offset by the field's base
// (1970 for the year, 0 otherwise), wide enough for 1970-2199.
type valueSet [4]uint64

func (s *valueSet) add(i int)      { s[i/64] |= 1 << uint(i%64) }
func (s *valueSet) has(i int) bool { return i >= 0 && i < 256 && s[i/64]&(1<<uint(i%64)) != 0 }
func (s *valueSet) word() uint64   { return s[0] }
func (s *valueSet) union(o valueSet) {
	s[0], s[1], s[2], s[3] = s[0]|o[0], s[1]|o[1], s[2]|o[2], s[3]|o[3]
}

// next returns the first member >= i, or -1.
func (s *valueSet) next(i int) int {
	for i = max(i, 0); i < 256; i = (i/64 + 1) * 64 {
		if w := s[i/64] >> uint(i%64); w != 0 {
			return i + bits.TrailingZeros64(w)
		}
	}
	return -1
}

func parseCron(conf string, loc *time.Location) (Schedule, error) {
	expr := strings.TrimSpace(conf)
	fields, err := cronSplit(expr)
	if err != nil {
		return nil, err
	}
	spec, err := compileCron(expr, fields)
	if err != nil {
		return nil, err
	}
	norm := strings.Join(fields[:6], " ")
	if fields[fieldYear] != "*" {
		norm += " " + fields[fieldYear]
	}
	return &cronSchedule{expr: norm, spec: spec, loc: loc}, nil
}

// compileCron validates the seven fields and builds the spec.
func compileCron(expr string, fields [7]string) (*cronSpec, error) {
	spec := &cronSpec{}
	var sets [7]valueSet
	for _, i := range []int{fieldSecond, fieldMinute, fieldHour, fieldMonth, fieldYear} {
		s, msg := cronFields[i].parse(fields[i])
		if msg != "" {
			return nil, cronError(expr, "%s", msg)
		}
		sets[i] = s
	}
	spec.sec, spec.min, spec.hour, spec.month = sets[fieldSecond].word(), sets[fieldMinute].word(), sets[fieldHour].word(), sets[fieldMonth].word()
	if fields[fieldYear] != "*" {
		spec.years = &sets[fieldYear]
	}
	domWild, dowWild := isWildcard(fields[fieldDom]), isWildcard(fields[fieldDow])
	if msg := spec.days.parseDom(fields[fieldDom]); msg != "" {
		return nil, cronError(expr, "%s", msg)
	}
	if msg := spec.days.parseDow(fields[fieldDow]); msg != "" {
		return nil, cronError(expr, "%s", msg)
	}
	switch {
	case !domWild && !dowWild:
		return nil, cronError(expr, "day-of-month %q and day-of-week %q are both set, but only one may be; set the other to ?, e.g. \"0 0 2 ? * MON\" or \"0 0 2 1 * ?\"",
			fields[fieldDom], fields[fieldDow])
	case domWild && dowWild:
		spec.days.kind = daysAny
	case dowWild:
		spec.days.kind = daysOfMonth
		if d := spec.days; d.last == 0 && d.nearest == 0 && d.nearestLast == 0 && !dateOccurs(d.dom, spec.month) {
			return nil, cronError(expr, "day-of-month %q never occurs in month %q, so the expression would never fire; pick days that exist in those months",
				fields[fieldDom], fields[fieldMonth])
		}
	default:
		spec.days.kind = daysOfWeek
	}
	if !spec.fires() {
		return nil, cronError(expr, "never fires: no date matches day-of-month %q, month %q, day-of-week %q and year %q together",
			fields[fieldDom], fields[fieldMonth], fields[fieldDow], fields[fieldYear])
	}
	return spec, nil
}

// cronSplit checks the shape of the expression and returns its seven fields
// (the year "*" when absent). An EventBridge expression, cron(min hour dom
// month dow year), becomes the Quartz one with second 0.
func cronSplit(expr string) ([7]string, error) {
	var out [7]string
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
	if inner, ok := cutEventBridge(expr); ok {
		fields := strings.Fields(inner)
		if len(fields) != 6 {
			return out, cronError(expr, "an EventBridge expression cron(...) has six fields, minutes hours day-of-month month day-of-week year, e.g. cron(0 12 * * ? *); got %d", len(fields))
		}
		out[0] = "0"
		copy(out[1:], fields)
		return out, nil
	}
	if strings.HasPrefix(strings.ToLower(expr), "rate(") || strings.HasPrefix(strings.ToLower(expr), "at(") {
		return out, cronError(expr, "EventBridge rate() and at() expressions are not cron; use schedule type fixed_rate (seconds) or at (a time)")
	}
	fields := strings.Fields(expr)
	switch n := len(fields); {
	case n == 5:
		return out, cronError(expr, "has 5 fields, but six are required with seconds first; to fire at second 0 prefix \"0 \": %q", "0 "+strings.Join(fields, " "))
	case n == 6, n == 7:
	default:
		plural := "s"
		if n == 1 {
			plural = ""
		}
		return out, cronError(expr, "has %d field%s, but six are required with seconds first, e.g. \"0 0 2 * * ?\"", n, plural)
	}
	copy(out[:], fields)
	if len(fields) == 6 {
		out[fieldYear] = "*"
		if looksEventBridge(fields) {
			return out, cronError(expr, "reads as an EventBridge expression (minutes hours day-of-month month day-of-week year); Ringjob's fields start with seconds, so write it as %q or prefix \"0 \"",
				"cron("+strings.Join(fields, " ")+")")
		}
	}
	return out, nil
}

// cutEventBridge returns the fields inside cron(...).
func cutEventBridge(expr string) (string, bool) {
	if len(expr) < 6 || !strings.EqualFold(expr[:5], "cron(") || !strings.HasSuffix(expr, ")") {
		return "", false
	}
	return expr[5 : len(expr)-1], true
}

// looksEventBridge reports whether six fields fail as Quartz (? in the hour
// or month field) but parse as EventBridge's minutes ... year. No valid
// Quartz expression has ? there, so this never rejects one.
func looksEventBridge(f []string) bool {
	if f[2] != "?" && f[4] != "?" {
		return false
	}
	_, err := compileCron("", [7]string{"0", f[0], f[1], f[2], f[3], f[4], f[5]})
	return err == nil
}

// parse validates a field without the day specials and returns its values,
// or a message saying what is wrong.
func (f cronField) parse(text string) (valueSet, string) {
	var set valueSet
	if text == "?" {
		if f.pos != fieldDom && f.pos != fieldDow {
			return set, fmt.Sprintf("? is only allowed in day-of-month and day-of-week; use * in %s", f.name)
		}
		return f.span(f.min, f.max, 1), ""
	}
	for item := range strings.SplitSeq(text, ",") {
		if item == "?" {
			return set, fmt.Sprintf("%s %q: ? must stand alone in its field", f.name, text)
		}
		s, msg := f.parseItem(item)
		if msg != "" {
			return set, msg
		}
		set.union(s)
	}
	return set, ""
}

func (f cronField) parseItem(item string) (valueSet, string) {
	var none valueSet
	if item == "" {
		return none, fmt.Sprintf("%s has an empty item in its comma list", f.name)
	}
	rng, stepText, hasStep := strings.Cut(item, "/")
	if strings.Contains(stepText, "/") {
		return none, fmt.Sprintf("%s %q has more than one /", f.name, item)
	}
	var lo, hi int
	switch {
	case rng == "*":
		lo, hi = f.min, f.max
	case rng == "?":
		return none, fmt.Sprintf("%s %q: ? cannot take a step; use */N", f.name, item)
	default:
		a, b, isRange := strings.Cut(rng, "-")
		var msg string
		if lo, msg = f.value(a, item); msg != "" {
			return none, msg
		}
		switch {
		case isRange:
			if strings.Contains(b, "-") {
				return none, fmt.Sprintf("%s %q has more than one -", f.name, item)
			}
			if hi, msg = f.value(b, item); msg != "" {
				return none, msg
			}
			if hi < lo {
				if f.pos == fieldYear {
					return none, fmt.Sprintf("year range %q runs backwards", rng)
				}
				hi += f.max - f.min + 1 // Quartz's overflowing range: 22-2 is 22,23,0,1,2
			}
		case hasStep: // "5/15" means from 5 to the end, every 15
			hi = f.max
		default:
			hi = lo
		}
		if hasStep && f.names != nil && (!isDigits(a) || isRange && !isDigits(b)) {
			return none, fmt.Sprintf("%s %q: a step after a name is read differently by Quartz (which ignores it) and other crons; start the step with a number, e.g. %d/%s, or list the values", f.name, item, lo, stepText)
		}
	}
	step := 1
	if hasStep {
		spanLen := f.max - f.min + 1
		n, err := strconv.Atoi(stepText)
		if err != nil || n < 1 || n > spanLen || !isDigits(stepText) {
			return none, fmt.Sprintf("%s step %q in %q must be a whole number from 1 to %d", f.name, stepText, item, spanLen)
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
		if strings.ContainsAny(strings.ToUpper(s), "LW#") {
			return 0, fmt.Sprintf("%s %q: L, W and # are only allowed in day-of-month (L, L-3, LW, 15W) and day-of-week (L, 6L, 6#3), each standing alone", f.name, item)
		}
		if f.names != nil {
			return 0, fmt.Sprintf("%s %q is not a number or a name (%s)", f.name, s, f.namesHelp)
		}
		return 0, fmt.Sprintf("%s %q is not a number", f.name, s)
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < f.min || v > f.max {
		msg := fmt.Sprintf("%s %s is out of range %d-%d", f.name, s, f.min, f.max)
		if f.pos == fieldDow {
			msg += " (" + dowHelp + ")"
		}
		return 0, msg
	}
	return v, ""
}

// span returns lo, lo+step, ... up to hi; values past the field's maximum
// wrap around (an overflowing range).
func (f cronField) span(lo, hi, step int) valueSet {
	var s valueSet
	base := 0
	if f.pos == fieldYear {
		base = minYear
	}
	n := f.max - f.min + 1
	for v := lo; v <= hi; v += step {
		s.add((v-f.min)%n + f.min - base)
	}
	return s
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
		if days&(1<<uint(daysInMonth[m]+1)-2) != 0 {
			return true
		}
	}
	return false
}

func cronError(expr, format string, args ...any) *ParseError {
	return confError("cron %q: %s %s", expr, fmt.Sprintf(format, args...), cronFieldsHelp)
}
