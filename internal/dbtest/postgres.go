package dbtest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// EnvPostgresDSN names the variable that points the tests at a PostgreSQL
// server, as a URL (postgres://USER[:PASS]@HOST:PORT/[DB]) whose user may
// CREATE and DROP databases. Its database, if any, is only used to connect.
const EnvPostgresDSN = "RINGJOB_POSTGRES_DSN"

// pgServer is the PostgreSQL server the tests of this process use.
type pgServer struct {
	base  *url.URL // as given; each test's URL replaces the path
	admin *sql.DB  // creates and drops the test databases
}

var (
	pgOnce     sync.Once
	thePG      *pgServer
	errPGSetup error
)

// Postgres returns the URL (postgres://...) of a new, empty database
// created for this test and dropped when it ends. Without
// RINGJOB_POSTGRES_DSN the test is skipped, saying so: PostgreSQL runs are
// part of `make test` (.ci/run starts a server and sets it), optional on a
// developer's machine. Set but not answering fails the test.
func Postgres(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvPostgresDSN)
	if dsn == "" {
		t.Skipf("dbtest: %s is not set, so the PostgreSQL run is skipped (set it, e.g. %s=postgres://postgres@127.0.0.1:5432/, or run `make test`)",
			EnvPostgresDSN, EnvPostgresDSN)
	}
	pgOnce.Do(func() { thePG, errPGSetup = connectPostgres(dsn) })
	if errPGSetup != nil {
		t.Fatalf("%v", errPGSetup)
	}
	s := thePG
	name := dbNameFit(t.Name(), randomHex(6), maxPostgresDBName)
	ctx, cancel := context.WithTimeout(context.Background(), ddlTimeout)
	defer cancel()
	// template0 with UTF-8 and the C collation: byte order, as MySQL's
	// utf8mb4_bin and SQLite's BINARY compare.
	if _, err := s.admin.ExecContext(ctx, `CREATE DATABASE "`+name+`" TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'`); err != nil {
		t.Fatalf("dbtest: create database %s on %s: %v", name, s.base.Host, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), ddlTimeout)
		defer cancel()
		// WITH (FORCE) ends the sessions a test left open (PostgreSQL 13+).
		if _, err := s.admin.ExecContext(ctx, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`); err != nil {
			t.Errorf("dbtest: drop database %s on %s: %v", name, s.base.Host, err)
		}
	})
	t.Logf("dbtest: database %s on %s", name, s.base.Host)
	u := *s.base
	u.Path = "/" + name
	return u.String()
}

// PostgresServerURL returns the URL of the server Postgres uses with the
// database given, for tests that work across databases (skipped like
// Postgres without the variable). Databases such tests create are theirs
// to drop.
func PostgresServerURL(t testing.TB, database string) string {
	t.Helper()
	Postgres(t) // skips, or makes sure the server answers
	u := *thePG.base
	u.Path = "/" + database
	return u.String()
}

func connectPostgres(dsn string) (*pgServer, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("dbtest: %s=%s: want postgres://USER@HOST:PORT/", EnvPostgresDSN, dsn)
	}
	admin := *u
	if admin.Path == "" || admin.Path == "/" {
		admin.Path = "/postgres"
	}
	db, err := sql.Open("pgx", admin.String())
	if err != nil {
		return nil, fmt.Errorf("dbtest: %s: open: %w", EnvPostgresDSN, err)
	}
	db.SetMaxIdleConns(2)
	ctx, cancel := context.WithTimeout(context.Background(), envPingTimeout)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("dbtest: %s=%s: %w\nFix it (the user needs CREATEDB), or unset it to skip the PostgreSQL runs",
			EnvPostgresDSN, u.Redacted(), err)
	}
	return &pgServer{base: u, admin: db}, nil
}
