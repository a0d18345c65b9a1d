package importer

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Ringjob's limits on names (service/: app names and job names).
const (
	minAppName = 4
	maxAppName = 64
	maxJobName = 255
	maxTitle   = 128
)

// appName makes s a valid Ringjob app name: lowercase letters, digits and
// '-', starting with a letter, 4..64 characters.
func appName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(s)) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '-', r == '_', r == '.', r == ' ', r == '/', r == ':':
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
				b.WriteByte('-')
			}
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == "" || out[0] < 'a' || out[0] > 'z' || len(out) < minAppName {
		out = strings.Trim("app-"+out, "-")
		for len(out) < minAppName {
			out += "x"
		}
	}
	if len(out) > maxAppName {
		out = strings.TrimRight(out[:maxAppName], "-")
	}
	return out
}

// uniqueApp returns name, or name-2, name-3 ... when taken.
func uniqueApp(name string, taken map[string]bool) string {
	out := name
	for i := 2; taken[out]; i++ {
		suffix := fmt.Sprintf("-%d", i)
		base := name
		if len(base)+len(suffix) > maxAppName {
			base = base[:maxAppName-len(suffix)]
		}
		out = base + suffix
	}
	taken[out] = true
	return out
}

// jobName makes s a valid job name: one line of printable text without
// '/' (children are written app_name/name), at most 255 characters; ""
// when nothing is left.
func jobName(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '/':
			return '-'
		case unicode.IsControl(r) || r == utf8.RuneError:
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	return cut(s, maxJobName)
}

// cut keeps the first n runes of s.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
