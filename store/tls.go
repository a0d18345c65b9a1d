package store

import (
	"crypto/tls"
	"fmt"
	"net"

	"github.com/go-sql-driver/mysql"
)

// applyTLS puts a TLS configuration of the caller on the connection
// config. It is set on the driver's Config itself, never registered under
// a name with mysql.RegisterTLSConfig: that registry is global to the
// process, so two stores (or two tests) with different CAs could take each
// other's.
func applyTLS(cfg *mysql.Config, tc *tls.Config) error {
	if tc == nil {
		return nil
	}
	if cfg.TLSConfig != "" {
		return fmt.Errorf("the database URL has a tls parameter (%q) and a TLS configuration is given too: keep one", cfg.TLSConfig)
	}
	tc = tc.Clone()
	if tc.ServerName == "" && !tc.InsecureSkipVerify {
		// The name the certificate must carry is the host connected to.
		host, _, err := net.SplitHostPort(cfg.Addr)
		if err != nil {
			host = cfg.Addr
		}
		tc.ServerName = host
	}
	cfg.TLS = tc
	return nil
}
