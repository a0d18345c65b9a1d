package alarm

import (
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"
)

// checkHTTPURL validates a webhook URL without putting it in the error: the
// URL usually is the secret.
func checkHTTPURL(field, raw string) error {
	if raw == "" {
		return fmt.Errorf("%w: %s is required", ErrInvalidConfig, field)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: %s must be an http:// or https:// URL, got %q", ErrInvalidConfig, field, Redact(raw))
	}
	if u.Fragment != "" {
		return fmt.Errorf("%w: %s must not have a #fragment", ErrInvalidConfig, field)
	}
	return nil
}

// checkTimeout rejects a negative timeout (zero means the default).
func checkTimeout(field string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%w: %s must not be negative, got %s", ErrInvalidConfig, field, d)
	}
	return nil
}

// formatRedacted prints s for every verb, so that no verb (%v, %+v, %#v, %d,
// %x, ...) reaches the raw fields of a value holding secrets.
func formatRedacted(f fmt.State, verb rune, s string) {
	if verb == 'q' {
		s = strconv.Quote(s)
	}
	_, _ = io.WriteString(f, s)
}

// orDefault returns s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
