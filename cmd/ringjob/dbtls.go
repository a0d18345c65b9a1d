package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// validateDatabaseTLS checks database_tls_mode and database_tls_ca_file
// against each other and the URL (the CA file itself is read at open).
func (c *Config) validateDatabaseTLS() []error {
	var errs []error
	switch c.DatabaseTLSMode {
	case "", dbTLSDisable, dbTLSRequire, dbTLSVerifyFull:
	default:
		errs = append(errs, fmt.Errorf("database_tls_mode must be %s, %s or %s, got %q", dbTLSDisable, dbTLSRequire, dbTLSVerifyFull, c.DatabaseTLSMode))
	}
	if c.DatabaseTLSMode == "" && c.DatabaseTLSCAFile == "" {
		return errs
	}
	if !isServerURL(c.DatabaseURL) {
		return append(errs, fmt.Errorf("database_tls_mode and database_tls_ca_file need a mysql:// or postgres:// database_url"))
	}
	if c.DatabaseTLSCAFile != "" && (c.DatabaseTLSMode == dbTLSDisable || c.DatabaseTLSMode == dbTLSRequire) {
		errs = append(errs, fmt.Errorf("database_tls_ca_file is set but database_tls_mode is %s, which checks no certificate: use %s, or drop the CA file", c.DatabaseTLSMode, dbTLSVerifyFull))
	}
	if u, err := url.Parse(c.DatabaseURL); err == nil {
		for k := range u.Query() {
			if strings.EqualFold(k, "tls") || strings.EqualFold(k, "sslmode") {
				errs = append(errs, fmt.Errorf("database_url has a %s parameter and database_tls_mode/database_tls_ca_file are set too: keep one", k))
			}
		}
	}
	return errs
}

// databaseTLS builds the TLS configuration of database connections from
// database_tls_mode and database_tls_ca_file; nil leaves it to the URL.
func databaseTLS(c *Config) (*tls.Config, error) {
	mode := c.DatabaseTLSMode
	if mode == "" && c.DatabaseTLSCAFile != "" {
		mode = dbTLSVerifyFull
	}
	switch mode {
	case "":
		return nil, nil
	case dbTLSDisable:
		return nil, nil
	case dbTLSRequire:
		// Encryption without a certificate check is what was asked for.
		return &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true}, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12} // the server name is the URL's host (store.OpenWith)
	if c.DatabaseTLSCAFile == "" {
		return tc, nil // the system's CAs
	}
	pem, err := os.ReadFile(c.DatabaseTLSCAFile)
	if err != nil {
		return nil, fmt.Errorf("database_tls_ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("database_tls_ca_file %s: no PEM certificate in it (want the CA bundle, e.g. the RDS global-bundle.pem)", c.DatabaseTLSCAFile)
	}
	tc.RootCAs = pool
	return tc, nil
}

// A plaintext connection to a server with require_secure_transport is
// refused by MySQL with its own error, and by MariaDB as "access denied"
// (the same as a wrong password: its error log alone says why).
const (
	errInsecureTransport = 3159 // MySQL 8
	errAccessDeniedUser  = 1045 // MariaDB
)

// databaseTLSOff reports whether connections go unencrypted.
func databaseTLSOff(c *Config) bool {
	if c.DatabaseTLSMode == dbTLSDisable {
		return true
	}
	if c.DatabaseTLSMode != "" || c.DatabaseTLSCAFile != "" {
		return false
	}
	u, err := url.Parse(c.DatabaseURL)
	if err != nil {
		return false
	}
	v := strings.ToLower(u.Query().Get("tls"))
	return v == "" || v == "false" || v == "0"
}

// explainDatabaseTLS adds to a connection error what to change in the
// configuration when TLS is its cause.
func explainDatabaseTLS(c *Config, err error) error {
	var (
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		me        *mysql.MySQLError
	)
	switch {
	case errors.As(err, &unknownCA):
		where := "the system's CAs"
		if c.DatabaseTLSCAFile != "" {
			where = "database_tls_ca_file " + c.DatabaseTLSCAFile
		}
		return fmt.Errorf("%w (the database's certificate is not signed by a CA in %s; on RDS use Amazon's RDS CA bundle)", err, where)
	case errors.As(err, &hostname):
		return fmt.Errorf("%w (database_url's host must be a name the database's certificate carries: on RDS its endpoint, not an IP address or another alias)", err)
	case errors.As(err, &invalid):
		return fmt.Errorf("%w (the database's certificate was refused by database_tls_mode %s)", err, dbTLSVerifyFull)
	case errors.As(err, &me) && me.Number == errInsecureTransport:
		return fmt.Errorf("%w (the database requires TLS: set database_tls_mode, e.g. %s with database_tls_ca_file)", err, dbTLSVerifyFull)
	case errors.As(err, &me) && me.Number == errAccessDeniedUser && databaseTLSOff(c):
		return fmt.Errorf("%w (the connection was not encrypted: if the database requires TLS, as RDS with require_secure_transport does, MariaDB refuses it this way; set database_tls_mode, e.g. %s with database_tls_ca_file)", err, dbTLSVerifyFull)
	}
	return err
}
