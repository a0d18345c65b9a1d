package service

import (
	"unicode"
	"unicode/utf8"
)

// checkText validates a free-text field: valid UTF-8, at most maxChars
// characters (runes) and, unless multiline, no control characters.
func checkText(field, v string, minChars, maxChars int, multiline bool) error {
	if !utf8.ValidString(v) {
		return invalid(field, "is not valid UTF-8 text")
	}
	n := utf8.RuneCountInString(v)
	if n < minChars {
		if minChars == 1 {
			return invalid(field, "is required and must not be empty")
		}
		return invalid(field, "must be at least %d characters, got %d", minChars, n)
	}
	if n > maxChars {
		return invalid(field, "must be at most %d characters, got %d", maxChars, n)
	}
	for _, r := range v {
		if r == 0 {
			return invalid(field, "contains a NUL character; remove it")
		}
		if !multiline && unicode.IsControl(r) {
			return invalid(field, "contains a control character (%U); use a single line of printable text", r)
		}
	}
	return nil
}

// checkBytes validates a payload field by size in bytes.
func checkBytes(field, v string, maxBytes int) error {
	if !utf8.ValidString(v) {
		return invalid(field, "is not valid UTF-8 text")
	}
	if len(v) > maxBytes {
		return invalid(field, "is %d bytes, more than the limit of %d bytes (%d KiB); pass a reference (a URL, a key) instead of the data itself",
			len(v), maxBytes, maxBytes/1024)
	}
	for _, r := range v {
		if r == 0 {
			return invalid(field, "contains a NUL character, which a process cannot receive; remove it")
		}
	}
	return nil
}
