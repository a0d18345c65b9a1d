package alarm

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"net"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// smtpMsg is one message the sink accepted.
type smtpMsg struct {
	Helo     string
	TLS      bool   // the session was encrypted when DATA came
	AuthUser string // "" without AUTH
	From     string
	To       []string
	Data     string // as received, dot-unstuffed, CRLF line ends
}

// smtpSink is a small SMTP server on 127.0.0.1 that speaks enough of RFC
// 5321 to take a message: EHLO/HELO, optional STARTTLS (RFC 3207),
// optional AUTH PLAIN (RFC 4616), MAIL, RCPT, DATA, RSET, NOOP, QUIT.
type smtpSink struct {
	t        *testing.T
	ln       net.Listener
	addr     *net.TCPAddr
	tls      *tls.Config // STARTTLS offered (or, with implicit, TLS at once) when set
	implicit bool
	users    map[string]string // AUTH PLAIN offered when set
	authTLS  bool              // AUTH offered only once the session is encrypted
	reject   map[string]string // RCPT address -> reply, such as "550 5.1.1 no such user"
	silent   bool              // accept connections but never greet

	mu    sync.Mutex
	msgs  []smtpMsg
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

type sinkOption func(*smtpSink)

func withStartTLS(cfg *tls.Config) sinkOption { return func(s *smtpSink) { s.tls = cfg } }
func withImplicitTLS(cfg *tls.Config) sinkOption {
	return func(s *smtpSink) { s.tls, s.implicit = cfg, true }
}
func withAuth(user, pass string, onlyOverTLS bool) sinkOption {
	return func(s *smtpSink) { s.users, s.authTLS = map[string]string{user: pass}, onlyOverTLS }
}
func withReject(addr, reply string) sinkOption {
	return func(s *smtpSink) {
		if s.reject == nil {
			s.reject = map[string]string{}
		}
		s.reject[addr] = reply
	}
}
func withSilence() sinkOption { return func(s *smtpSink) { s.silent = true } }

// newSMTPSink listens on host (127.0.0.1 unless given) and serves until the
// test ends.
func newSMTPSink(t *testing.T, host string, opts ...sinkOption) *smtpSink {
	t.Helper()
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", host, err)
	}
	s := &smtpSink{t: t, ln: ln, addr: ln.Addr().(*net.TCPAddr), conns: map[net.Conn]bool{}}
	for _, o := range opts {
		o(s)
	}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

func (s *smtpSink) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				c.Close()
			}()
			s.serve(c)
		}()
	}
}

func (s *smtpSink) close() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// messages returns what the sink accepted so far.
func (s *smtpSink) messages() []smtpMsg {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]smtpMsg(nil), s.msgs...)
}

// only returns the single message the sink accepted.
func (s *smtpSink) only(t *testing.T) smtpMsg {
	t.Helper()
	msgs := s.messages()
	require.Len(t, msgs, 1)
	return msgs[0]
}

func (s *smtpSink) serve(conn net.Conn) {
	if s.silent {
		buf := make([]byte, 1)
		_, _ = conn.Read(buf) // until the client gives up
		return
	}
	encrypted := false
	if s.implicit {
		tc := tls.Server(conn, s.tls)
		if err := tc.Handshake(); err != nil {
			return
		}
		conn, encrypted = tc, true
	}
	tp := textproto.NewConn(conn)
	reply := func(format string, args ...any) bool { return tp.PrintfLine(format, args...) == nil }
	if !reply("220 sink.test ESMTP ready") {
		return
	}
	var cur smtpMsg
	helo, authUser := "", ""
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		verb, arg, _ := strings.Cut(line, " ")
		switch strings.ToUpper(verb) {
		case "EHLO":
			helo = arg
			ext := []string{"sink.test greets " + arg, "8BITMIME", "SIZE 10240000"}
			if s.tls != nil && !encrypted {
				ext = append(ext, "STARTTLS")
			}
			if s.users != nil && (encrypted || !s.authTLS) {
				ext = append(ext, "AUTH PLAIN")
			}
			for i, e := range ext {
				sep := "-"
				if i == len(ext)-1 {
					sep = " "
				}
				reply("250%s%s", sep, e)
			}
		case "HELO":
			helo = arg
			reply("250 sink.test")
		case "STARTTLS":
			if s.tls == nil || encrypted {
				reply("502 5.5.1 not offered")
				continue
			}
			reply("220 2.0.0 go ahead")
			tc := tls.Server(conn, s.tls)
			if err := tc.Handshake(); err != nil {
				return
			}
			conn, encrypted = tc, true
			tp = textproto.NewConn(conn)
			helo, authUser, cur = "", "", smtpMsg{} // RFC 3207: forget everything
		case "AUTH":
			mech, resp, _ := strings.Cut(arg, " ")
			if s.users == nil || !strings.EqualFold(mech, "PLAIN") || (s.authTLS && !encrypted) {
				reply("504 5.5.4 unrecognized authentication type")
				continue
			}
			raw, err := base64.StdEncoding.DecodeString(resp)
			parts := strings.Split(string(raw), "\x00")
			if err != nil || len(parts) != 3 || s.users[parts[1]] != parts[2] || parts[2] == "" {
				reply("535 5.7.8 authentication credentials invalid")
				continue
			}
			authUser = parts[1]
			reply("235 2.7.0 authentication successful")
		case "MAIL":
			if helo == "" {
				reply("503 5.5.1 EHLO first")
				continue
			}
			if s.users != nil && authUser == "" {
				reply("530 5.7.0 authentication required")
				continue
			}
			cur = smtpMsg{Helo: helo, AuthUser: authUser, From: between(arg, "<", ">")}
			reply("250 2.1.0 ok")
		case "RCPT":
			to := between(arg, "<", ">")
			if r, ok := s.reject[to]; ok {
				reply("%s", r)
				continue
			}
			cur.To = append(cur.To, to)
			reply("250 2.1.5 ok")
		case "DATA":
			if cur.From == "" || len(cur.To) == 0 {
				reply("503 5.5.1 need MAIL and RCPT")
				continue
			}
			reply("354 end with <CRLF>.<CRLF>")
			data, err := tp.ReadDotBytes()
			if err != nil {
				return
			}
			cur.Data = strings.ReplaceAll(string(data), "\n", "\r\n")
			cur.TLS = encrypted
			s.mu.Lock()
			s.msgs = append(s.msgs, cur)
			s.mu.Unlock()
			cur = smtpMsg{Helo: helo, AuthUser: authUser}
			reply("250 2.0.0 queued")
		case "RSET":
			cur = smtpMsg{Helo: helo, AuthUser: authUser}
			reply("250 2.0.0 ok")
		case "NOOP":
			reply("250 2.0.0 ok")
		case "QUIT":
			reply("221 2.0.0 bye")
			return
		default:
			reply("502 5.5.2 command not recognized")
		}
	}
}

func between(s, open, close string) string {
	_, rest, ok := strings.Cut(s, open)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, close)
	return v
}

// testCA is a self-signed certificate for 127.0.0.1 and localhost, and the
// path of its PEM file (for EmailConfig.CAFile).
type testCA struct {
	server  *tls.Config
	pemFile string
}

func newTestCA(t *testing.T) testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "ringjob alarm test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(file, certPEM, 0o600))
	return testCA{server: &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, pemFile: file}
}

// emailConfig is a config for the sink.
func (s *smtpSink) emailConfig() EmailConfig {
	return EmailConfig{
		Host: s.addr.IP.String(),
		Port: s.addr.Port,
		From: "Ringjob <ringjob@example.com>",
		To:   []string{"oncall@example.com"},
	}
}
