package schedule

import (
	"strconv"
	"strings"
)

// Ringjob's first cron dialect numbered the days of the week 0=SUN ... 6=SAT
// (Vixie cron, as robfig/cron reads them) and allowed a step after a name
// (MON-FRI/2). The Quartz dialect reads 1=SUN ... 7=SAT and rejects a step
// after a name, so stored expressions are rewritten once, by
// UpgradeLegacyCron, to a form that fires on the same days in both.

var (
	legacyDowNames = [7]string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}
	monthNames     = [13]string{"", "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}
)

// UpgradeLegacyCron rewrites an expression of the first dialect so that it
// fires on the same days under the Quartz dialect: a day-of-week field with
// numbers or a step becomes names (1-5 -> MON-FRI, 0,6 -> SUN,SAT,
// */2 -> SUN,TUE,THU,SAT), and a month field with a step after a name
// becomes its month names. It reports whether it changed anything; an
// expression that was not valid in the first dialect, or needs no change,
// comes back as it is.
func UpgradeLegacyCron(expr string) (string, bool) {
	fields := strings.Fields(expr)
	if len(fields) != 6 && !(len(fields) == 7 && fields[6] == "*") {
		return expr, false
	}
	changed := false
	if dow := fields[fieldDow]; !isWildcard(dow) && strings.ContainsAny(dow, "0123456789/") {
		days, ok := legacySet(dow, 0, 6, func(s string) (int, bool) {
			for i, n := range legacyDowNames {
				if strings.EqualFold(s, n) {
					return i, true
				}
			}
			return 0, false
		})
		if !ok {
			return expr, false
		}
		fields[fieldDow] = namesList(days, 0, 6, legacyDowNames[:])
		changed = true
	}
	if mon := fields[fieldMonth]; strings.Contains(mon, "/") && strings.IndexFunc(mon, isLetter) >= 0 {
		months, ok := legacySet(mon, 1, 12, func(s string) (int, bool) {
			for i, n := range monthNames {
				if i > 0 && strings.EqualFold(s, n) {
					return i, true
				}
			}
			return 0, false
		})
		if !ok {
			return expr, false
		}
		fields[fieldMonth] = namesList(months, 1, 12, monthNames[:])
		changed = true
	}
	if !changed {
		return expr, false
	}
	return strings.Join(fields, " "), true
}

func isLetter(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' }

// legacySet reads a field the way the first dialect did: comma items of *,
// N, N-M (never wrapping), with an optional /S; N and M numbers or names.
func legacySet(text string, lo, hi int, name func(string) (int, bool)) (uint64, bool) {
	value := func(s string) (int, bool) {
		if v, ok := name(s); ok {
			return v, true
		}
		v, err := strconv.Atoi(s)
		return v, err == nil && isDigits(s) && v >= lo && v <= hi
	}
	var set uint64
	for item := range strings.SplitSeq(text, ",") {
		rng, stepText, hasStep := strings.Cut(item, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 {
				return 0, false
			}
			step = n
		}
		var a, b int
		switch {
		case rng == "*" || rng == "?":
			a, b = lo, hi
		default:
			first, last, isRange := strings.Cut(rng, "-")
			var ok bool
			if a, ok = value(first); !ok {
				return 0, false
			}
			b = a
			if isRange {
				if b, ok = value(last); !ok || b < a {
					return 0, false
				}
			} else if hasStep {
				b = hi
			}
		}
		for v := a; v <= b; v += step {
			set |= 1 << uint(v)
		}
	}
	return set, set != 0
}

// namesList writes a set as names, runs of three or more as ranges:
// MON-FRI, SUN,SAT, JAN-MAR,JUL.
func namesList(set uint64, lo, hi int, names []string) string {
	var parts []string
	for v := lo; v <= hi; v++ {
		if set&(1<<uint(v)) == 0 {
			continue
		}
		end := v
		for end+1 <= hi && set&(1<<uint(end+1)) != 0 {
			end++
		}
		switch {
		case end-v >= 2:
			parts = append(parts, names[v]+"-"+names[end])
		case end == v+1:
			parts = append(parts, names[v], names[end])
		default:
			parts = append(parts, names[v])
		}
		v = end
	}
	return strings.Join(parts, ",")
}
