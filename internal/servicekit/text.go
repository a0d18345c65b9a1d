package servicekit

import (
	"unicode"
	"unicode/utf8"
)

// CheckText validates a free-text field: valid UTF-8, at most maxChars
// characters (runes) and, unless multiline, no control characters.
func CheckText(field, v string, minChars, maxChars int, multiline bool) error {
	if !utf8.ValidString(v) {
		return Invalid(field, "is not valid UTF-8 text")
	}
	n := utf8.RuneCountInString(v)
	if n < minChars {
		if minChars == 1 {
			return Invalid(field, "is required and must not be empty")
		}
		return Invalid(field, "must be at least %d characters, got %d", minChars, n)
	}
	if n > maxChars {
		return Invalid(field, "must be at most %d characters, got %d", maxChars, n)
	}
	for _, r := range v {
		if r == 0 {
			return Invalid(field, "contains a NUL character; remove it")
		}
		if !multiline && unicode.IsControl(r) {
			return Invalid(field, "contains a control character (%U); use a single line of printable text", r)
		}
	}
	return nil
}
