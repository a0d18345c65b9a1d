package schedule

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// maxSkips bounds the candidates Next discards before giving up; each skip
// jumps past a whole zone period or past `after`, so a handful is plenty.
const maxSkips = 64

// yearsSearched bounds the search for the next fire when the year is not
// restricted: the Gregorian calendar repeats every 400 years, so a day rule
// that matches nothing in 400 years never matches.
const yearsSearched = 401

// cronSchedule fires on a cron expression read on the wall clock of loc.
type cronSchedule struct {
	expr string    // normalised expression
	spec *cronSpec // matched on naive wall clocks
	loc  *time.Location
}

// String returns the normalised expression: six Quartz fields, and the year
// when it is not *.
func (c *cronSchedule) String() string { return c.expr }

// Next returns the first fire strictly after `after`; see doc.go for the DST rules.
func (c *cronSchedule) Next(after time.Time) (time.Time, bool) {
	// Every wall time up to after's own wall clock maps to an instant no later
	// than after (the mapping never decreases), so the search starts there.
	x := wallClock(after, c.loc)
	for range maxSkips {
		w, ok := c.spec.nextWall(x)
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

// cronSpec is a compiled Quartz expression, matched against naive wall
// clocks (time.Time in UTC whose fields are the wall reading).
type cronSpec struct {
	sec, min, hour uint64    // bits 0-59, 0-59, 0-23
	month          uint64    // bits 1-12
	years          *valueSet // bit y-1970; nil = every year
	days           dayRule
}

// Kinds of day rule: which of day-of-month and day-of-week is in force.
const (
	daysAny     = iota // both are * or ?
	daysOfMonth        // day-of-week is * or ?
	daysOfWeek         // day-of-month is * or ?
)

// dayRule holds both day fields; kind says which one applies.
type dayRule struct {
	kind int
	// day-of-month
	dom         uint64 // bits 1-31: plain days
	last        uint64 // bit n: the day n before the last (L = bit 0, L-3 = bit 3)
	nearest     uint64 // bits 1-31: the weekday nearest the day (15W)
	nearestLast uint64 // bit n: the weekday nearest the day n before the last (LW, L-2W)
	// day-of-week, 1=SUN ... 7=SAT
	dow        uint64 // bits 1-7: plain weekdays
	lastOfKind int    // 6L: the last Friday of the month (0 = none)
	nthKind    int    // 6#3: weekday 6 ...
	nth        int    // ... its third occurrence in the month (0 = none)
}

// fires reports whether the spec matches any wall time at all.
func (c *cronSpec) fires() bool {
	from := time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)
	if c.years != nil {
		from = time.Date(minYear+c.years.next(0), time.January, 1, 0, 0, 0, 0, time.UTC).Add(-time.Second)
	}
	_, ok := c.nextWall(from)
	return ok
}

// nextWall returns the first naive wall time strictly after x that matches.
func (c *cronSpec) nextWall(x time.Time) (time.Time, bool) {
	t := x.Truncate(time.Second).Add(time.Second)
	y, mon, d := t.Date()
	mo := int(mon)
	h, mi, s := t.Clock()
	lastYear := y + yearsSearched
	if c.years != nil {
		lastYear = minYear + 255
	}
	var days uint64
	cacheY, cacheM := 0, 0
	for y <= lastYear {
		if c.years != nil {
			ny := y
			if y < minYear {
				ny = minYear
			}
			ny = c.years.next(ny - minYear)
			if ny < 0 {
				return time.Time{}, false
			}
			if ny += minYear; ny != y {
				y, mo, d, h, mi, s = ny, 1, 1, 0, 0, 0
			}
		}
		nm := nextBit(c.month, mo)
		if nm < 0 {
			y, mo, d, h, mi, s = y+1, 1, 1, 0, 0, 0
			continue
		}
		if nm != mo {
			mo, d, h, mi, s = nm, 1, 0, 0, 0
		}
		if y != cacheY || mo != cacheM {
			days, cacheY, cacheM = c.days.mask(y, mo), y, mo
		}
		nd := nextBit(days, d)
		if nd < 0 {
			mo, d, h, mi, s = mo+1, 1, 0, 0, 0
			continue
		}
		if nd != d {
			d, h, mi, s = nd, 0, 0, 0
		}
		nh := nextBit(c.hour, h)
		if nh < 0 {
			d, h, mi, s = d+1, 0, 0, 0
			continue
		}
		if nh != h {
			h, mi, s = nh, 0, 0
		}
		nmi := nextBit(c.min, mi)
		if nmi < 0 {
			h, mi, s = h+1, 0, 0
			continue
		}
		if nmi != mi {
			mi, s = nmi, 0
		}
		ns := nextBit(c.sec, s)
		if ns < 0 {
			mi, s = mi+1, 0
			continue
		}
		return time.Date(y, time.Month(mo), d, h, mi, ns, 0, time.UTC), true
	}
	return time.Time{}, false
}

// nextBit returns the lowest set bit of m at or above i, or -1.
func nextBit(m uint64, i int) int {
	if i >= 64 {
		return -1
	}
	if w := m >> uint(i); w != 0 {
		return i + bits.TrailingZeros64(w)
	}
	return -1
}

// monthLength is the number of days in month mo of year y.
func monthLength(y, mo int) int {
	return time.Date(y, time.Month(mo)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// weekdayOf is the Quartz weekday (1=SUN ... 7=SAT) of a date.
func weekdayOf(y, mo, d int) int {
	return int(time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC).Weekday()) + 1
}

// mask returns the days of month mo in year y that the rule matches.
func (r *dayRule) mask(y, mo int) uint64 {
	ldom := monthLength(y, mo)
	all := uint64(1)<<uint(ldom+1) - 2 // bits 1..ldom
	switch r.kind {
	case daysOfMonth:
		m := r.dom & all
		for n := range bitsOf(r.last) {
			if d := ldom - n; d >= 1 {
				m |= 1 << uint(d)
			}
		}
		for d := range bitsOf(r.nearest) {
			if d <= ldom {
				m |= 1 << uint(nearestWeekday(y, mo, d, ldom))
			}
		}
		for n := range bitsOf(r.nearestLast) {
			if d := ldom - n; d >= 1 {
				m |= 1 << uint(nearestWeekday(y, mo, d, ldom))
			}
		}
		return m
	case daysOfWeek:
		first := weekdayOf(y, mo, 1)
		// day d has weekday (first-1+d-1)%7+1; k's first date is 1+(k-first+7)%7
		firstOf := func(k int) int { return 1 + (k-first+7)%7 }
		var m uint64
		for k := range bitsOf(r.dow) {
			for d := firstOf(k); d <= ldom; d += 7 {
				m |= 1 << uint(d)
			}
		}
		if r.lastOfKind != 0 {
			d := firstOf(r.lastOfKind)
			for d+7 <= ldom {
				d += 7
			}
			m |= 1 << uint(d)
		}
		if r.nth != 0 {
			if d := firstOf(r.nthKind) + 7*(r.nth-1); d <= ldom {
				m |= 1 << uint(d)
			}
		}
		return m
	default:
		return all
	}
}

// nearestWeekday is Quartz's W: the day itself on Monday to Friday, else the
// nearest weekday in the same month (Saturday the 1st gives Monday the 3rd,
// Sunday the last gives Friday before it).
func nearestWeekday(y, mo, d, ldom int) int {
	switch weekdayOf(y, mo, d) {
	case 7: // Saturday
		if d == 1 {
			return 3
		}
		return d - 1
	case 1: // Sunday
		if d == ldom {
			return d - 2
		}
		return d + 1
	}
	return d
}

// bitsOf yields the set bits of m, lowest first.
func bitsOf(m uint64) func(func(int) bool) {
	return func(yield func(int) bool) {
		for m != 0 {
			i := bits.TrailingZeros64(m)
			if !yield(i) {
				return
			}
			m &= m - 1
		}
	}
}

// parseDom reads the day-of-month field: plain items plus L, L-n, LW, L-nW
// and nW, in any comma list.
func (r *dayRule) parseDom(text string) string {
	f := cronFields[fieldDom]
	if isWildcard(text) {
		return ""
	}
	for item := range strings.SplitSeq(text, ",") {
		up := strings.ToUpper(item)
		switch {
		case item == "?":
			return fmt.Sprintf("%s %q: ? must stand alone in its field", f.name, text)
		case strings.HasPrefix(up, "L"):
			rest, nearest := strings.CutSuffix(up[1:], "W")
			n := 0
			if rest != "" {
				num, ok := strings.CutPrefix(rest, "-")
				v, err := strconv.Atoi(num)
				if !ok || !isDigits(num) || err != nil || v > 30 {
					return fmt.Sprintf("%s %q: write L (last day), L-n with n from 0 to 30 (n days before the last), LW (last weekday) or L-nW", f.name, item)
				}
				n = v
			}
			if nearest {
				r.nearestLast |= 1 << uint(n)
			} else {
				r.last |= 1 << uint(n)
			}
		case strings.HasSuffix(up, "W"):
			num := up[:len(up)-1]
			v, err := strconv.Atoi(num)
			if !isDigits(num) || err != nil || v < 1 || v > 31 {
				return fmt.Sprintf("%s %q: W takes a single day from 1 to 31, e.g. 15W (the weekday nearest the 15th)", f.name, item)
			}
			r.nearest |= 1 << uint(v)
		case strings.Contains(up, "#"):
			return fmt.Sprintf("%s %q: # (nth weekday of the month) belongs in day-of-week, e.g. \"0 0 9 ? * 6#3\"", f.name, item)
		default:
			s, msg := f.parseItem(item)
			if msg != "" {
				return msg
			}
			r.dom |= s.word()
		}
	}
	return ""
}

// parseDow reads the day-of-week field: plain items (1=SUN ... 7=SAT, or
// names), or one of L (Saturday), 6L / FRIL (the last Friday) and 6#3 /
// FRI#3 (the third Friday) standing alone, as in Quartz.
func (r *dayRule) parseDow(text string) string {
	f := cronFields[fieldDow]
	if isWildcard(text) {
		return ""
	}
	up := strings.ToUpper(text)
	if strings.Contains(up, ",") && (strings.Contains(up, "#") || strings.Contains(strings.ReplaceAll(up, "JUL", ""), "L")) {
		return fmt.Sprintf("%s %q: L and # must stand alone in day-of-week (as in Quartz); to combine days use several jobs", f.name, text)
	}
	switch {
	case up == "L":
		r.dow = 1 << 7 // Quartz: L alone is the last day of the week, Saturday
		return ""
	case strings.Contains(up, "#"):
		kind, nth, _ := strings.Cut(up, "#")
		k, msg := f.value(kind, text)
		if msg != "" {
			return msg
		}
		n, err := strconv.Atoi(nth)
		if !isDigits(nth) || err != nil || n < 1 || n > 5 {
			return fmt.Sprintf("%s %q: # takes an occurrence from 1 to 5, e.g. 6#3 (the third Friday)", f.name, text)
		}
		r.nthKind, r.nth = k, n
		return ""
	case strings.HasSuffix(up, "L"):
		k, msg := f.value(strings.TrimSuffix(up, "L"), text)
		if msg != "" {
			return fmt.Sprintf("%s %q: L after a day means its last occurrence in the month, e.g. 6L or FRIL (the last Friday): %s", f.name, text, msg)
		}
		r.lastOfKind = k
		return ""
	}
	s, msg := f.parse(text)
	if msg != "" {
		return msg
	}
	r.dow = s.word()
	return ""
}
