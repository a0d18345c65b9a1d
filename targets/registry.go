package targets

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
)

// Registry maps URI schemes to drivers. The scheduler builds one at start;
// it is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	drivers map[string]Driver
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{drivers: map[string]Driver{}}
}

// Register plugs a driver in for a scheme ("local", "http", ...). A later
// registration for the same scheme replaces the earlier one.
func (r *Registry) Register(scheme string, d Driver) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drivers[strings.ToLower(scheme)] = d
}

// Schemes lists the registered schemes, sorted.
func (r *Registry) Schemes() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.drivers))
	for s := range r.drivers {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Scheme returns the scheme of a target URI. Lambda function ARNs
// (arn:aws:lambda:...) map to the "lambda" scheme.
func Scheme(target string) (string, error) {
	if strings.HasPrefix(target, "arn:") {
		return "lambda", nil
	}
	u, err := url.Parse(target)
	if err != nil {
		return "", fmt.Errorf("target %q is not a URI: %w", target, err)
	}
	if u.Scheme == "" {
		return "", fmt.Errorf("target %q has no scheme (expected e.g. local://NAME or http://host:port)", target)
	}
	return strings.ToLower(u.Scheme), nil
}

// For returns the driver for a target URI.
func (r *Registry) For(target string) (Driver, error) {
	scheme, err := Scheme(target)
	if err != nil {
		return nil, err
	}
	r.mu.RLock()
	d, ok := r.drivers[scheme]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q (target %q; registered: %s)", ErrUnknownScheme, scheme, target, strings.Join(r.Schemes(), ", "))
	}
	return d, nil
}
