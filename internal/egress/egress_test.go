package egress_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/egress"
)

func policy(t *testing.T, c egress.Config, listen string, dns *dnsServer) *egress.Policy {
	t.Helper()
	p, err := egress.New(c, listen)
	require.NoError(t, err)
	if dns != nil {
		p.UseResolver(dns.resolver())
	}
	return p
}

func TestDefaultPolicy(t *testing.T) {
	t.Parallel()
	dns := startDNS(t, map[string][]string{
		"metadata.attacker.test": {"169.254.169.254"},
		"executor.internal.test": {"127.0.0.1"},
	})
	p := policy(t, egress.Config{}, "127.0.0.1:8080", dns)
	ctx := context.Background()
	for _, tc := range []struct {
		url  string
		deny string // "" = allowed
	}{
		{"http://169.254.169.254/latest/meta-data/", "169.254.0.0/16"},
		{"http://[fd00:ec2::254]/", "fd00:ec2::254/128"},
		{"http://[fe80::1]:9999/", "fe80::/10"},
		{"http://[fd00:ec2::254%25eth0]/", "IPv6 zone"},
		{"http://[fe80::1%25eth0]:9999/", "IPv6 zone"},
		{"http://[ff02::1%25eth0]:9999/", "IPv6 zone"},
		{"http://[::1%25lo]:9999/", "IPv6 zone"},
		{"http://[::ffff:169.254.169.254]/", "169.254.0.0/16"},
		{"http://0.0.0.0:9999/", "0.0.0.0/8"},
		{"http://100.100.100.200/", "100.100.100.200/32"},
		{"http://127.0.0.1:8080/", "own listener"},
		{"http://metadata.attacker.test:80/", "metadata.attacker.test resolves to"},
		{"http://127.0.0.1:9999/", ""},
		{"http://[::1]:9999/", ""},
		{"http://10.1.2.3:9999/", ""},
		{"http://executor.internal.test:9999/", ""},
	} {
		err := p.CheckURL(ctx, tc.url)
		if tc.deny == "" {
			require.NoError(t, err, tc.url)
			continue
		}
		require.ErrorIs(t, err, egress.ErrDenied, tc.url)
		require.Contains(t, err.Error(), tc.deny, tc.url)
	}
}

func TestConfiguredPolicy(t *testing.T) {
	t.Parallel()
	dns := startDNS(t, map[string][]string{
		"a.svc.test":       {"127.0.0.1"},
		"blocked.svc.test": {"10.0.0.9"},
	})
	p := policy(t, egress.Config{AllowedCIDRs: []string{"10.0.0.0/8"}, DeniedCIDRs: []string{"10.9.0.0/16"},
		AllowedHosts: []string{"*.svc.test"}, DeniedHosts: []string{"blocked.svc.test"}}, "", dns)
	ctx := context.Background()
	require.NoError(t, p.CheckURL(ctx, "http://10.1.1.1:9999"), "in allowed_cidrs")
	require.NoError(t, p.CheckURL(ctx, "http://a.svc.test:9999"), "matches allowed_hosts")
	for _, bad := range []string{"http://127.0.0.1:9999", "http://10.9.1.1:9999", "http://blocked.svc.test:9999", "http://169.254.169.254"} {
		require.ErrorIs(t, p.CheckURL(ctx, bad), egress.ErrDenied, bad)
	}

	_, err := egress.New(egress.Config{DeniedCIDRs: []string{"10.0.0.0"}, AllowedHosts: []string{"a*b"}}, "")
	require.ErrorContains(t, err, "outbound.denied_cidrs[0]")
	require.ErrorContains(t, err, "outbound.allowed_hosts[0]")
}

// TestDNSRebinding: the name resolves to an allowed address when it is
// checked and to the metadata address when the server connects; the
// connection is refused because the dialer checks the address it uses.
func TestDNSRebinding(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	dns := startDNS(t, map[string][]string{"rebind.attacker.test": {"127.0.0.1", "169.254.169.254"}})
	p := policy(t, egress.Config{}, "", dns)
	url := "http://rebind.attacker.test:" + port + "/"
	require.NoError(t, p.CheckURL(context.Background(), url), "first answer: loopback, allowed")
	c := p.Client(3 * time.Second)
	_, err := c.Get(url)
	require.ErrorIs(t, err, egress.ErrDenied)
	require.Contains(t, err.Error(), "169.254.169.254")
	require.Zero(t, hits.Load())
}

func TestClientNeverFollowsRedirects(t *testing.T) {
	t.Parallel()
	var inner atomic.Int32
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { inner.Add(1) }))
	defer internal.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, internal.URL+"/secret", http.StatusFound)
	}))
	defer redirector.Close()
	p := policy(t, egress.Config{}, "", nil)
	resp, err := p.Client(3*time.Second).Post(redirector.URL, "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode, "the 3xx comes back to the caller")
	require.Zero(t, inner.Load(), "the redirect target got nothing")
}

func TestOwnListenerOnAllAddresses(t *testing.T) {
	t.Parallel()
	p := policy(t, egress.Config{}, "0.0.0.0:18080", nil)
	for _, u := range []string{"http://127.0.0.1:18080", "http://[::1]:18080"} {
		err := p.CheckURL(context.Background(), u)
		require.True(t, errors.Is(err, egress.ErrDenied), "%s: %v", u, err)
	}
	require.NoError(t, p.CheckURL(context.Background(), "http://127.0.0.1:18081"))
}

// TestZonedAddresses: an IPv6 zone is refused by default, and when allowed
// the address is judged without it (a prefix never contains a zoned
// address, so [::1%lo] once passed a denied ::1).
func TestZonedAddresses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	strict := policy(t, egress.Config{DeniedCIDRs: []string{"::1/128"}}, "", nil)
	zoned := policy(t, egress.Config{DeniedCIDRs: []string{"::1/128"}, AllowZonedAddresses: true}, "", nil)
	for _, tc := range []struct{ url, deny string }{
		{"http://[::1%25lo]:9999/", "::1/128"},
		{"http://[fe80::1%25eth0]:9999/", "fe80::/10"},
		{"http://[fd00:ec2::254%25eth0]/", "fd00:ec2::254/128"},
		{"http://[ff02::1%25eth0]:9999/", "ff00::/8"},
	} {
		err := strict.CheckURL(ctx, tc.url)
		require.ErrorIs(t, err, egress.ErrDenied, tc.url)
		require.Contains(t, err.Error(), "outbound.allow_zoned_addresses", tc.url)
		err = zoned.CheckURL(ctx, tc.url)
		require.ErrorIs(t, err, egress.ErrDenied, tc.url)
		require.Contains(t, err.Error(), tc.deny, tc.url)
	}
	require.NoError(t, zoned.CheckURL(ctx, "http://[fd00::1%25eth0]:9999/"), "an allowed address with a zone, when zones are allowed")

	// The dialer refuses them too (a member saved before this rule).
	_, err := strict.Client(2 * time.Second).Get("http://[::1%25lo]:9/")
	require.ErrorIs(t, err, egress.ErrDenied)
}
