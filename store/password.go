package store

import (
	"context"
	"crypto/tls"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// PasswordSource gives the MySQL password for new connections. refresh is
// true when the database has just refused the last password it gave (a
// rotated password): it must then read the current one again instead of
// answering from a cache.
type PasswordSource func(ctx context.Context, refresh bool) (string, error)

// OpenOptions are the options of OpenWith.
type OpenOptions struct {
	// Password, when set, supplies the password of every new MySQL
	// connection (the URL's password is then ignored), and is asked again
	// with refresh when the database refuses it.
	Password PasswordSource
	// TLS, when set, encrypts every MySQL connection with it (a server
	// name left empty is the URL's host). The URL must then have no tls
	// parameter.
	TLS *tls.Config
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, dbURL string, opts OpenOptions) (*Store, error) {
	if opts.Password == nil && opts.TLS == nil {
		return Open(ctx, dbURL)
	}
	if isPostgresURL(dbURL) {
		return openPostgres(ctx, dbURL, opts)
	}
	if !strings.HasPrefix(dbURL, "mysql://") {
		return nil, fmt.Errorf("database url %q: a password source and TLS apply to mysql:// and postgres:// only", redactURL(dbURL))
	}
	dsn, err := mysqlDSNFromURL(dbURL)
	if err != nil {
		return nil, err
	}
	return openMySQL(ctx, dsn, opts)
}

// errAccessDenied is MySQL's "Access denied for user" (a wrong password).
const errAccessDenied = 1045

// refreshingConnector asks its password source again, once, when a new
// connection is refused for its password, so a password rotated in Secrets
// Manager is picked up by the pool without a restart.
type refreshingConnector struct {
	cfg      *mysql.Config
	password PasswordSource
}

func (c *refreshingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.connect(ctx, false)
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == errAccessDenied {
		return c.connect(ctx, true)
	}
	return conn, err
}

func (c *refreshingConnector) connect(ctx context.Context, refresh bool) (driver.Conn, error) {
	pw, err := c.password(ctx, refresh)
	if err != nil {
		return nil, fmt.Errorf("read the database password: %w", err)
	}
	cfg := c.cfg.Clone()
	cfg.Passwd = pw
	inner, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return inner.Connect(ctx)
}

func (c *refreshingConnector) Driver() driver.Driver { return mysql.MySQLDriver{} }
