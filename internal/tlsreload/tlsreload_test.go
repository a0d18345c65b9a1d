package tlsreload

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"
)

// writePair writes a self-signed certificate for cn and its key.
func writePair(t *testing.T, certFile, keyFile, cn string, mtime time.Time) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{certFile, keyFile} {
		if err := os.Chtimes(f, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
}

// serve answers TLS handshakes on a real socket until the test ends.
func serve(t *testing.T, c *Certificate) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", c.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				_ = conn.(*tls.Conn).Handshake()
			}()
		}
	}()
	return ln.Addr().String()
}

// served dials addr and returns the common name of the certificate served.
func served(t *testing.T, addr string) string {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
}

func TestReloadOnChange(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	t0 := time.Now().Add(-time.Hour)
	writePair(t, certFile, keyFile, "first", t0)
	var logs bytes.Buffer
	l := logrus.New()
	l.SetOutput(&logs)
	clock := clockwork.NewFakeClock()
	c, err := New(certFile, keyFile, clock, logrus.NewEntry(l))
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, c)
	if cn := served(t, addr); cn != "first" {
		t.Fatalf("served %q, want first", cn)
	}

	// New files: not looked at before CheckInterval has passed...
	writePair(t, certFile, keyFile, "second", t0.Add(time.Minute))
	if cn := served(t, addr); cn != "first" {
		t.Fatalf("served %q within the check interval, want first", cn)
	}
	// ...then served from the next handshake on.
	clock.Advance(CheckInterval)
	if cn := served(t, addr); cn != "second" {
		t.Fatalf("served %q after the files changed, want second", cn)
	}
	if !strings.Contains(logs.String(), "certificate reloaded") {
		t.Fatalf("no reload logged: %s", logs.String())
	}

	// A half-replaced pair (new certificate, old key) does not load: the
	// loaded one stays, and the complete pair is taken at a later check.
	other := t.TempDir()
	writePair(t, filepath.Join(other, "c"), filepath.Join(other, "k"), "third", t0)
	b, _ := os.ReadFile(filepath.Join(other, "c"))
	if err := os.WriteFile(certFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	clock.Advance(CheckInterval)
	if cn := served(t, addr); cn != "second" {
		t.Fatalf("served %q from a mismatched pair, want second kept", cn)
	}
	if !strings.Contains(logs.String(), "do not load") {
		t.Fatalf("mismatched pair not reported: %s", logs.String())
	}
	kb, _ := os.ReadFile(filepath.Join(other, "k"))
	if err := os.WriteFile(keyFile, kb, 0o600); err != nil {
		t.Fatal(err)
	}
	clock.Advance(CheckInterval)
	if cn := served(t, addr); cn != "third" {
		t.Fatalf("served %q once the pair is whole, want third", cn)
	}
}

func TestBadFilesAreAnErrorAtStart(t *testing.T) {
	dir := t.TempDir()
	if _, err := New(filepath.Join(dir, "missing.crt"), filepath.Join(dir, "missing.key"), nil, nil); err == nil || !strings.Contains(err.Error(), "missing.crt") {
		t.Fatalf("want an error naming missing.crt, got %v", err)
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writePair(t, certFile, keyFile, "x", time.Now())
	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(certFile, keyFile, nil, nil); err == nil || !strings.Contains(err.Error(), "tls.key") {
		t.Fatalf("want an error naming the key file, got %v", err)
	}
}
