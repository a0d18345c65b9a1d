// Package tlsreload serves a TLS certificate from a certificate file and a
// key file and picks up new files without a restart (cert-manager, certbot
// or a mounted secret replace them), for servers that terminate TLS
// themselves instead of behind a load balancer.
package tlsreload

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/logs"
)

// CheckInterval is how often, at most, a handshake looks at the files.
const CheckInterval = time.Second

// Certificate is a certificate/key pair read from files. Handshakes check
// the files' size and modification time at most every CheckInterval and
// load them again when they changed; a pair that does not load (say, the
// certificate is replaced but the key not yet) is reported and the previous
// one kept until a later check loads. It is safe for concurrent use.
type Certificate struct {
	certFile, keyFile string
	clock             clockwork.Clock
	log               *logrus.Entry

	mu      sync.Mutex
	current *tls.Certificate
	stamp   string // size and modification times of the loaded files
	checked time.Time
}

// New loads the pair; an error names the file that could not be used.
func New(certFile, keyFile string, clock clockwork.Clock, log *logrus.Entry) (*Certificate, error) {
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	log = logs.OrDiscard(log)
	c := &Certificate{certFile: certFile, keyFile: keyFile, clock: clock, log: log}
	stamp, err := c.fileStamp()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: load certificate %s and key %s: %w", certFile, keyFile, err)
	}
	c.current, c.stamp, c.checked = &cert, stamp, clock.Now()
	return c, nil
}

// Config returns a server TLS config (TLS 1.2 or later) that serves the
// current certificate.
func (c *Certificate) Config() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: c.GetCertificate}
}

// GetCertificate is tls.Config.GetCertificate.
func (c *Certificate) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if now.Sub(c.checked) < CheckInterval {
		return c.current, nil
	}
	c.checked = now
	stamp, err := c.fileStamp()
	if err != nil {
		c.log.WithError(err).Warn("tls: cannot read the certificate files; serving the loaded certificate")
		return c.current, nil
	}
	if stamp == c.stamp {
		return c.current, nil
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		c.log.WithError(err).Warn("tls: the changed certificate files do not load (yet); serving the loaded certificate")
		return c.current, nil
	}
	c.current, c.stamp = &cert, stamp
	fields := logrus.Fields{"cert_file": c.certFile}
	if cert.Leaf != nil {
		fields["not_after"] = cert.Leaf.NotAfter.UTC().Format(time.RFC3339)
		fields["subject"] = cert.Leaf.Subject.String()
	}
	c.log.WithFields(fields).Info("tls: certificate reloaded")
	return c.current, nil
}

func (c *Certificate) fileStamp() (string, error) {
	var s string
	for _, f := range []string{c.certFile, c.keyFile} {
		fi, err := os.Stat(f) // follows symlinks: a mounted secret swaps its target
		if err != nil {
			return "", fmt.Errorf("tls: %w", err)
		}
		s += fmt.Sprintf("%d/%d;", fi.Size(), fi.ModTime().UnixNano())
	}
	return s, nil
}
