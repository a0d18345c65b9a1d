package targets

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// CleanMessage makes text that came from outside (an executor's answer, a
// callback's message, a function's error) safe to keep in a run record and
// show in a console or a terminal: invalid UTF-8 and control characters
// (ANSI escapes, carriage returns, NULs) are dropped, except newlines and
// tabs, and the result is cut to at most max bytes (on a rune boundary)
// with "..." appended when it was longer.
func CleanMessage(s string, max int) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || (unicode.IsControl(r) && r != '\n' && r != '\t') {
			clean = false
			break
		}
	}
	if !clean {
		var b strings.Builder
		b.Grow(len(s))
		for _, r := range s {
			if r == utf8.RuneError || (unicode.IsControl(r) && r != '\n' && r != '\t') {
				continue
			}
			b.WriteRune(r)
		}
		s = b.String()
	}
	if max > 0 && len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}
