package service

import (
	"unicode/utf8"

	"github.com/ringjob/ringjob/internal/servicekit"
)

// checkText validates a free-text field (servicekit.CheckText).
func checkText(field, v string, minChars, maxChars int, multiline bool) error {
	return servicekit.CheckText(field, v, minChars, maxChars, multiline)
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
