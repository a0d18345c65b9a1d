package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/ringjob/ringjob/internal/secretbox"
)

// Store is Ringjob's storage seam. All SQL lives behind its methods.
type Store struct {
	db   conn    // the pool, or the transaction of a Store made by Tx
	pool *sql.DB // always the pool
	d    dialect
	inTx bool
	// database is the MySQL schema name, or PostgreSQL's database.schema
	// (it scopes the names of named locks).
	database string
	// box seals secrets at rest (nil = plaintext); see UseSecrets.
	box            *secretbox.Box
	sealedSettings map[string]bool
	// hints: fire times of runs created here, for partition pruning
	// (partitions_prune.go); nil on SQLite.
	hints *runHints
	// stats: PostgreSQL's first statistics of runs and jobs (pgstats.go);
	// nil on MySQL and SQLite.
	stats *pgStats
}

// Kind reports the database kind: "mysql", "postgres" or "sqlite".
func (s *Store) Kind() string { return s.d.name() }

// NamedLocks reports whether the database has session-scoped named locks
// (MySQL GET_LOCK, PostgreSQL advisory locks): node liveness is then seen
// through them.
func (s *Store) NamedLocks() bool { return s.d.namedLocks() }

// DB exposes the pool for health checks.
func (s *Store) DB() *sql.DB { return s.pool }

// Close closes the pool.
func (s *Store) Close() error { return s.pool.Close() }

// Open connects to a database given as a URL:
//
//	sqlite://PATH             (relative or absolute path; sqlite:///abs/path also works)
//	mysql://USER:PASS@HOST:PORT/DB[?param=value]
//	postgres://USER:PASS@HOST:PORT/DB[?sslmode=...]  (or postgresql://)
//
// It does not migrate; call Migrate.
func Open(ctx context.Context, dbURL string) (*Store, error) {
	switch {
	case strings.HasPrefix(dbURL, "sqlite://"):
		return OpenSQLite(ctx, strings.TrimPrefix(dbURL, "sqlite://"))
	case strings.HasPrefix(dbURL, "mysql://"):
		dsn, err := mysqlDSNFromURL(dbURL)
		if err != nil {
			return nil, err
		}
		return OpenMySQL(ctx, dsn)
	case isPostgresURL(dbURL):
		return OpenPostgres(ctx, dbURL)
	default:
		return nil, fmt.Errorf("database url %q: want sqlite://PATH, mysql://USER:PASS@HOST:PORT/DB or postgres://USER:PASS@HOST:PORT/DB", redactURL(dbURL))
	}
}

// isPostgresURL reports whether a database URL names PostgreSQL.
func isPostgresURL(u string) bool {
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}

func mysqlDSNFromURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("database url %q: %w", redactURL(raw), err)
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || u.Host == "" {
		return "", fmt.Errorf("database url %q: want mysql://USER:PASS@HOST:PORT/DB", redactURL(raw))
	}
	cfg := mysql.NewConfig()
	cfg.Net = "tcp"
	cfg.Addr = u.Host
	if u.Port() == "" {
		cfg.Addr = u.Host + ":3306"
	}
	cfg.DBName = db
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	cfg.Params = map[string]string{}
	for k, v := range u.Query() {
		cfg.Params[k] = v[0]
	}
	return cfg.FormatDSN(), nil
}

// redactURL hides a password in a database URL for messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// OpenMySQL connects with a go-sql-driver/mysql DSN.
func OpenMySQL(ctx context.Context, dsn string) (*Store, error) {
	return openMySQL(ctx, dsn, OpenOptions{})
}

// openMySQL connects; with opts.Password set, every new connection takes its
// password from it (see refreshingConnector).
func openMySQL(ctx context.Context, dsn string, opts OpenOptions) (*Store, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse mysql dsn: %w", err)
	}
	cfg.ParseTime = false
	cfg.InterpolateParams = true // one round trip per statement
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if err := applyTLS(cfg, opts.TLS); err != nil {
		return nil, err
	}
	// A connector, not a DSN string: the TLS configuration lives on cfg.
	var db *sql.DB
	if opts.Password != nil {
		db = sql.OpenDB(&refreshingConnector{cfg: cfg, password: opts.Password})
	} else {
		conn, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, fmt.Errorf("open mysql: %w", err)
		}
		db = sql.OpenDB(conn)
	}
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(16)
	db.SetConnMaxLifetime(30 * time.Minute)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to mysql at %s: %w", cfg.Addr, err)
	}
	var database sql.NullString
	if err := db.QueryRowContext(pctx, "SELECT DATABASE()").Scan(&database); err != nil {
		db.Close()
		return nil, fmt.Errorf("read the database name at %s: %w", cfg.Addr, err)
	}
	s := &Store{db: db, pool: db, d: mysqlDialect{}, database: database.String, hints: newRunHints()}
	s.detectPartitionedRuns(pctx)
	return s, nil
}

// OpenSQLite opens (creating if needed) an SQLite database file.
func OpenSQLite(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, fmt.Errorf("sqlite path is empty")
	}
	if err := prepareSQLiteFile(path); err != nil {
		return nil, err
	}
	dsn := "file:" + path + "?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	// One connection: SQLite has one writer anyway, and a single connection
	// turns writer contention into queueing instead of SQLITE_BUSY errors.
	db.SetMaxOpenConns(1)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	// The WAL and shared-memory files exist now; SQLite gives them the
	// database file's mode, but files left by an older version may be wider.
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := privateFile(path + suffix); err != nil {
			db.Close()
			return nil, err
		}
	}
	return &Store{db: db, pool: db, d: sqliteDialect{}}, nil
}

// prepareSQLiteFile creates the database's directory (0700) and file (0600)
// when they do not exist, and narrows an existing file to 0600: the
// database holds run params, logs and token hashes, for the server's user
// only. An existing directory is left as it is (it may be shared).
func prepareSQLiteFile(path string) error {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create directory for sqlite database %s: %w", path, err)
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		return f.Close()
	case errors.Is(err, fs.ErrExist):
		return privateFile(path)
	default:
		return fmt.Errorf("create sqlite database %s: %w", path, err)
	}
}

// privateFile narrows an existing file to 0600 (a missing one is fine).
func privateFile(path string) error {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, st.Mode().Perm()&0o700); err != nil {
			return fmt.Errorf("make %s private (0600): %w", path, err)
		}
	}
	return nil
}

// placeholders returns "?,?,?" with n marks.
func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?,", n-1) + "?"
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
