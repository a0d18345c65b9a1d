package api

import (
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// clientAddr is the address a request came from: the TCP peer, unless the
// peer is one of the trusted proxies (Options.TrustedProxies). Then
// X-Forwarded-For is read from the right: each proxy appends the address it
// received the request from, so the first address that is not a trusted
// proxy is the client. The entries left of it were written by the client and
// are never believed. The login limiter and the audit log key on it.
func (s *server) clientAddr(c *fiber.Ctx) string {
	peer, ok := netip.AddrFromSlice(c.Context().RemoteIP())
	if !ok {
		return c.IP()
	}
	peer = peer.Unmap()
	if !s.trustedProxy(peer) {
		return peer.String()
	}
	hops := strings.Split(string(c.Request().Header.Peek(fiber.HeaderXForwardedFor)), ",")
	addr := peer
	for i := len(hops) - 1; i >= 0; i-- {
		h := strings.TrimSpace(hops[i])
		if h == "" {
			continue
		}
		a, err := netip.ParseAddr(h)
		if err != nil {
			break // not an address: what is left of it cannot be trusted either
		}
		addr = a.Unmap().WithZone("")
		if !s.trustedProxy(addr) {
			break
		}
	}
	return addr.String()
}

func (s *server) trustedProxy(a netip.Addr) bool {
	for _, p := range s.trustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
