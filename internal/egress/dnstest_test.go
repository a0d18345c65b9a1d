package egress_test

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// dnsServer is a real DNS server on a UDP socket that answers A queries
// from a table; each name has a list of answers handed out in turn (the
// last one repeats), which is how a rebinding attacker's server behaves.
type dnsServer struct {
	conn *net.UDPConn
	mu   sync.Mutex
	a    map[string][]netip.Addr
}

func startDNS(t *testing.T, answers map[string][]string) *dnsServer {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	s := &dnsServer{conn: conn, a: map[string][]netip.Addr{}}
	for name, list := range answers {
		for _, a := range list {
			s.a[name] = append(s.a[name], netip.MustParseAddr(a))
		}
	}
	go s.serve()
	t.Cleanup(func() { conn.Close() })
	return s
}

// resolver resolves through this server only.
func (s *dnsServer) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", s.conn.LocalAddr().String())
	}}
}

func (s *dnsServer) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		if resp := s.answer(buf[:n]); resp != nil {
			_, _ = s.conn.WriteToUDP(resp, from)
		}
	}
}

// answer builds the response to one query: the header with the question
// copied, and an A record (name as a pointer to the question) when the
// name is known and the query asks for A.
func (s *dnsServer) answer(q []byte) []byte {
	if len(q) < 12 {
		return nil
	}
	i := 12
	var labels []string
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if i+1+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	i++ // the root label
	if i+4 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i:])
	question := q[12 : i+4]
	name := strings.ToLower(strings.Join(labels, "."))

	var rdata []byte
	s.mu.Lock()
	if list := s.a[name]; qtype == 1 && len(list) > 0 {
		a := list[0]
		if len(list) > 1 {
			s.a[name] = list[1:]
		}
		b := a.As4()
		rdata = b[:]
	}
	known := len(s.a[name]) > 0
	s.mu.Unlock()

	resp := make([]byte, 12, 12+len(question)+16)
	copy(resp, q[:2])                            // id
	binary.BigEndian.PutUint16(resp[2:], 0x8180) // response, recursion desired+available, NOERROR
	if !known {
		binary.BigEndian.PutUint16(resp[2:], 0x8183) // NXDOMAIN
	}
	binary.BigEndian.PutUint16(resp[4:], 1) // questions
	if rdata != nil {
		binary.BigEndian.PutUint16(resp[6:], 1) // answers
	}
	resp = append(resp, question...)
	if rdata != nil {
		resp = append(resp, 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 0) // name ptr, A, IN, TTL 0
		resp = append(resp, 0, 4)
		resp = append(resp, rdata...)
	}
	return resp
}
