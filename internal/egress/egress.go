package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Config is the outbound policy as an operator writes it (outbound: in the
// server config).
type Config struct {
	// AllowedCIDRs, when set (with AllowedHosts), are the only addresses the
	// server may connect to, besides hosts matching AllowedHosts.
	AllowedCIDRs []string `yaml:"allowed_cidrs"`
	// DeniedCIDRs are never connected to, in addition to the defaults.
	DeniedCIDRs []string `yaml:"denied_cidrs"`
	// AllowedHosts are host name patterns ("executors.internal",
	// "*.svc.cluster.local"); when set (with AllowedCIDRs), a destination
	// must match one of them or AllowedCIDRs.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// DeniedHosts are host name patterns never connected to.
	DeniedHosts []string `yaml:"denied_hosts"`
	// DisableDefaultDenies drops the built-in denied ranges (link-local,
	// cloud metadata, multicast). Only for networks where an executor really
	// lives at such an address.
	DisableDefaultDenies bool `yaml:"disable_default_denies"`
	// AllowZonedAddresses lets destinations carry an IPv6 zone
	// ("[fe80::1%eth0]"). Refused by default: a zone selects an interface,
	// which only link-local addresses need. Either way the address is judged
	// by the CIDRs without its zone.
	AllowZonedAddresses bool `yaml:"allow_zoned_addresses"`
}

// DefaultDeniedCIDRs are refused unless DisableDefaultDenies.
var DefaultDeniedCIDRs = []string{
	"0.0.0.0/8",          // "this network": 0.0.0.0 reaches the local host
	"169.254.0.0/16",     // IPv4 link-local, with the AWS/GCP/Azure metadata service 169.254.169.254
	"100.100.100.200/32", // Alibaba Cloud metadata
	"224.0.0.0/4",        // multicast
	"255.255.255.255/32", // broadcast
	"::/128",             // unspecified
	"fe80::/10",          // IPv6 link-local
	"fd00:ec2::254/128",  // AWS metadata over IPv6
	"ff00::/8",           // IPv6 multicast
}

// Validate checks the CIDRs and host patterns, naming the field.
func (c Config) Validate() error {
	var errs []error
	for field, list := range map[string][]string{"outbound.allowed_cidrs": c.AllowedCIDRs, "outbound.denied_cidrs": c.DeniedCIDRs} {
		for i, s := range list {
			if _, err := netip.ParsePrefix(strings.TrimSpace(s)); err != nil {
				errs = append(errs, fmt.Errorf("%s[%d]: %q is not a CIDR such as 10.0.0.0/8 or fd00::/8", field, i, s))
			}
		}
	}
	for field, list := range map[string][]string{"outbound.allowed_hosts": c.AllowedHosts, "outbound.denied_hosts": c.DeniedHosts} {
		for i, s := range list {
			p := strings.TrimPrefix(s, "*.")
			if p == "" || strings.ContainsAny(p, "*/: ") {
				errs = append(errs, fmt.Errorf("%s[%d]: %q must be a host name, optionally starting with \"*.\"", field, i, s))
			}
		}
	}
	return errors.Join(errs...)
}

// ErrDenied is a destination the outbound policy refuses.
var ErrDenied = errors.New("outbound policy denies")

// Policy checks destinations. Build it with New; the zero value is not ready.
type Policy struct {
	allowed, denied []netip.Prefix
	allowHosts      []string
	denyHosts       []string
	self            []netip.AddrPort // the server's own listener
	selfAnyPort     uint16           // listening on all addresses at this port (0 = no)
	allowZones      bool             // Config.AllowZonedAddresses
	resolver        *net.Resolver
}

// New builds a policy. listen is the server's own listen address
// (host:port, "" = none), never a valid destination.
func New(c Config, listen string) (*Policy, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	p := &Policy{resolver: net.DefaultResolver, allowZones: c.AllowZonedAddresses}
	for _, s := range c.AllowedCIDRs {
		p.allowed = append(p.allowed, netip.MustParsePrefix(strings.TrimSpace(s)).Masked())
	}
	denied := append([]string(nil), c.DeniedCIDRs...)
	if !c.DisableDefaultDenies {
		denied = append(denied, DefaultDeniedCIDRs...)
	}
	for _, s := range denied {
		p.denied = append(p.denied, netip.MustParsePrefix(strings.TrimSpace(s)).Masked())
	}
	for _, h := range c.AllowedHosts {
		p.allowHosts = append(p.allowHosts, strings.ToLower(strings.TrimSuffix(h, ".")))
	}
	for _, h := range c.DeniedHosts {
		p.denyHosts = append(p.denyHosts, strings.ToLower(strings.TrimSuffix(h, ".")))
	}
	if listen != "" {
		if err := p.addSelf(listen); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// UseResolver makes the policy resolve host names with r (tests point it
// at their own DNS server).
func (p *Policy) UseResolver(r *net.Resolver) { p.resolver = r }

func (p *Policy) addSelf(listen string) error {
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("outbound policy: listen address %q: %w", listen, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return fmt.Errorf("outbound policy: listen port %q: %w", portStr, err)
	}
	var addrs []netip.Addr
	if host == "" || host == "0.0.0.0" || host == "::" {
		p.selfAnyPort = uint16(port)
		return nil
	} else if a, err := netip.ParseAddr(host); err == nil {
		addrs = append(addrs, a)
	} else {
		ips, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", host)
		if err != nil {
			return fmt.Errorf("outbound policy: resolve listen host %q: %w", host, err)
		}
		addrs = ips
	}
	for _, a := range addrs {
		p.self = append(p.self, netip.AddrPortFrom(a.Unmap(), uint16(port)))
	}
	return nil
}

func matchHost(pattern, host string) bool {
	if rest, ok := strings.CutPrefix(pattern, "*."); ok {
		return strings.HasSuffix(host, "."+rest)
	}
	return host == pattern
}

// checkHost applies the host patterns to a destination's host name.
func (p *Policy) checkHost(host string) (allowedByName bool, err error) {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	for _, pat := range p.denyHosts {
		if matchHost(pat, h) {
			return false, fmt.Errorf("%w host %q (outbound.denied_hosts %q)", ErrDenied, host, pat)
		}
	}
	for _, pat := range p.allowHosts {
		if matchHost(pat, h) {
			return true, nil
		}
	}
	return false, nil
}

// checkAddr applies the CIDRs and the own-listener rule to a connection's
// address.
func (p *Policy) checkAddr(ap netip.AddrPort, allowedByName bool) error {
	a := ap.Addr().Unmap()
	// A prefix never contains an address with a zone (netip), so every
	// check below would pass it: judge the address itself.
	if zone := a.Zone(); zone != "" {
		if !p.allowZones {
			return fmt.Errorf("%w %s: an IPv6 zone (%%%s) is refused unless outbound.allow_zoned_addresses", ErrDenied, a, zone)
		}
		a = a.WithZone("")
	}
	for _, d := range p.denied {
		if d.Contains(a) {
			return fmt.Errorf("%w %s: in denied range %s (link-local, cloud metadata and multicast addresses are denied by default; see outbound in the config)", ErrDenied, a, d)
		}
	}
	if p.isSelf(netip.AddrPortFrom(a, ap.Port())) {
		return fmt.Errorf("%w %s: that is this server's own listener", ErrDenied, netip.AddrPortFrom(a, ap.Port()))
	}
	if allowedByName || (len(p.allowed) == 0 && len(p.allowHosts) == 0) {
		return nil
	}
	for _, al := range p.allowed {
		if al.Contains(a) {
			return nil
		}
	}
	return fmt.Errorf("%w %s: not in outbound.allowed_cidrs and the host is not in outbound.allowed_hosts", ErrDenied, a)
}

func (p *Policy) isSelf(ap netip.AddrPort) bool {
	for _, s := range p.self {
		if s == ap {
			return true
		}
	}
	if p.selfAnyPort != 0 && ap.Port() == p.selfAnyPort {
		if ap.Addr().IsLoopback() || ap.Addr().IsUnspecified() {
			return true
		}
		if ifs, err := net.InterfaceAddrs(); err == nil {
			for _, ia := range ifs {
				if n, ok := ia.(*net.IPNet); ok {
					if a, ok := netip.AddrFromSlice(n.IP); ok && a.Unmap() == ap.Addr() {
						return true
					}
				}
			}
		}
	}
	return false
}

// CheckURL checks an http(s) URL before it is saved or registered: its
// host patterns, and every address its host resolves to now.
func (p *Policy) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL", raw)
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return p.CheckHostPort(ctx, u.Hostname(), port)
}

// CheckHostPort checks a destination host and port (resolving the host).
func (p *Policy) CheckHostPort(ctx context.Context, host, port string) error {
	byName, err := p.checkHost(host)
	if err != nil {
		return err
	}
	pn, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return fmt.Errorf("port %q is not a number", port)
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		addrs = []netip.Addr{a}
	} else {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if addrs, err = p.resolver.LookupNetIP(rctx, "ip", host); err != nil {
			return fmt.Errorf("resolve %q: %w", host, err)
		}
	}
	for _, a := range addrs {
		if err := p.checkAddr(netip.AddrPortFrom(a, uint16(pn)), byName); err != nil {
			if a.String() != host {
				return fmt.Errorf("%s resolves to %w", host, err)
			}
			return err
		}
	}
	return nil
}

// DialContext returns a dial function that checks the host name before
// resolving it and the address right before connecting to it, so the
// address checked is the address used.
func (p *Policy) DialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		byName, err := p.checkHost(host)
		if err != nil {
			return nil, err
		}
		dd := *d
		dd.Resolver = p.resolver
		inner := d.Control
		dd.Control = func(network, address string, c syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w %s: not an IP address", ErrDenied, address)
			}
			if err := p.checkAddr(ap, byName); err != nil {
				if host != ap.Addr().String() {
					return fmt.Errorf("%s resolves to %w", host, err)
				}
				return err
			}
			if inner != nil {
				return inner(network, address, c)
			}
			return nil
		}
		return dd.DialContext(ctx, network, addr)
	}
}

// ErrRedirect is a 3xx answer: clients built here never follow one.
var ErrRedirect = errors.New("redirects are not followed")

// NoRedirects is an http.Client CheckRedirect that hands the 3xx answer back
// to the caller, who fails on it.
func NoRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Transport returns base (cloned; nil = http.DefaultTransport) dialing
// through the policy, without a proxy.
func (p *Policy) Transport(base *http.Transport, d *net.Dialer) *http.Transport {
	if base == nil {
		base = http.DefaultTransport.(*http.Transport)
	}
	tr := base.Clone()
	if d == nil {
		d = &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	}
	tr.Proxy = nil
	tr.DialContext = p.DialContext(d)
	return tr
}

// Client returns an HTTP client that dials through the policy and never
// follows redirects.
func (p *Policy) Client(timeout time.Duration) *http.Client {
	return &http.Client{Transport: p.Transport(nil, nil), Timeout: timeout, CheckRedirect: NoRedirects}
}
