package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

const (
	// EnvDSN names the variable that points the tests at a MySQL/MariaDB server.
	EnvDSN = "RINGJOB_MYSQL_DSN"
	// EnvForceThrowaway names the variable that, when true, makes dbtest start
	// its own mariadbd even if EnvDSN is set or 127.0.0.1:3306 answers.
	EnvForceThrowaway = "RINGJOB_DBTEST_FORCE_THROWAWAY"

	localDSN         = "root@tcp(127.0.0.1:3306)/"
	localPingTimeout = 2 * time.Second
	envPingTimeout   = 10 * time.Second
	// ddlTimeout bounds CREATE and DROP DATABASE.
	ddlTimeout = 30 * time.Second
)

// server is the MySQL/MariaDB server the tests of this process use.
type server struct {
	cfg    *mysql.Config // as given, with the driver options dbtest promises
	source string        // where it came from, for logs and messages
	admin  *sql.DB       // creates and drops the test databases
	own    *throwaway    // the throwaway server, nil if someone else runs it
}

var (
	serverOnce sync.Once
	theServer  *server
	serverErr  error

	// wrapped is set by Wrap; warnOnce warns when a throwaway runs without it.
	wrapped  bool
	warnOnce sync.Once
)

// MySQL returns the DSN of a new, empty database (utf8mb4) created for this
// test and dropped when it ends. The DSN is in go-sql-driver/mysql format
// with parseTime=false, multiStatements=true and interpolateParams=true.
// See the package doc for how the server is found.
func MySQL(t testing.TB) string {
	t.Helper()
	s := mustServer(t)
	name := dbName(t.Name(), randomHex(6))

	ctx, cancel := context.WithTimeout(context.Background(), ddlTimeout)
	defer cancel()
	if _, err := s.admin.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
		t.Fatalf("dbtest: create database %s on %s: %v", name, s.source, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), ddlTimeout)
		defer cancel()
		if _, err := s.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("dbtest: drop database %s on %s: %v", name, s.source, err)
		}
	})
	t.Logf("dbtest: database %s on %s", name, s.source)

	cfg := s.cfg.Clone()
	cfg.DBName = name
	return cfg.FormatDSN()
}

// MySQLServerDSN returns a DSN for the server MySQL uses, with no database
// selected and the same driver options, for tests that work across
// databases. Databases such tests create are theirs to drop.
func MySQLServerDSN(t testing.TB) string {
	t.Helper()
	cfg := mustServer(t).cfg.Clone()
	cfg.DBName = ""
	return cfg.FormatDSN()
}

// mustServer finds the server once per process and fails t if there is none.
func mustServer(t testing.TB) *server {
	t.Helper()
	serverOnce.Do(func() {
		theServer, serverErr = resolve(os.Getenv)
		if serverErr == nil && theServer.own != nil && !wrapped {
			warnOnce.Do(func() {
				fmt.Fprintln(os.Stderr, "dbtest: started a throwaway mariadbd but TestMain does not call dbtest.Main(m); "+
					"it is killed when the test process exits, but its directory stays until a later run removes it")
			})
		}
	})
	if serverErr != nil {
		t.Fatalf("%v", serverErr)
	}
	return theServer
}

// resolve finds a server: EnvDSN, else 127.0.0.1:3306, else a throwaway
// mariadbd. getenv is os.Getenv outside tests.
func resolve(getenv func(string) string) (*server, error) {
	var tried []string
	force, _ := strconv.ParseBool(getenv(EnvForceThrowaway))
	if force {
		tried = append(tried, EnvForceThrowaway+" is set, so "+EnvDSN+" and 127.0.0.1:3306 were not tried")
	} else {
		if dsn := getenv(EnvDSN); dsn != "" {
			s, err := connect(dsn, envPingTimeout)
			if err != nil {
				return nil, fmt.Errorf("dbtest: %s=%s: %w\nFix it (the user needs CREATE and DROP DATABASE), "+
					"or unset it to use 127.0.0.1:3306 or a throwaway mariadbd", EnvDSN, redact(dsn), err)
			}
			s.source = EnvDSN + " (" + s.cfg.Addr + ")"
			return s, nil
		}
		s, err := connect(localDSN, localPingTimeout)
		if err == nil {
			s.source = "127.0.0.1:3306"
			return s, nil
		}
		tried = append(tried, fmt.Sprintf("%s: %v", localDSN, err))
	}

	begin := time.Now()
	tw, err := startThrowaway()
	if err != nil {
		tried = append(tried, "throwaway mariadbd: "+err.Error())
		return nil, noServerError(tried)
	}
	s, err := connect(tw.dsn(), envPingTimeout)
	if err != nil {
		_ = tw.stop()
		tried = append(tried, fmt.Sprintf("throwaway mariadbd in %s: %v", tw.dir, err))
		return nil, noServerError(tried)
	}
	s.source = fmt.Sprintf("throwaway mariadbd on 127.0.0.1:%d in %s (started in %s)",
		tw.port, tw.dir, time.Since(begin).Round(time.Millisecond))
	s.own = tw
	return s, nil
}

// connect parses dsn, sets the driver options dbtest promises, and pings.
func connect(dsn string, timeout time.Duration) (*server, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse DSN: %w", err)
	}
	cfg.ParseTime = false
	cfg.MultiStatements = true
	cfg.InterpolateParams = true

	adminCfg := cfg.Clone()
	if adminCfg.Timeout == 0 || adminCfg.Timeout > timeout {
		adminCfg.Timeout = timeout
	}
	admin, err := sql.Open("mysql", adminCfg.FormatDSN())
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	admin.SetMaxIdleConns(2)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := admin.PingContext(ctx); err != nil {
		_ = admin.Close()
		return nil, fmt.Errorf("ping: %w", err)
	}
	return &server{cfg: cfg, admin: admin}, nil
}

// redact hides the password in a DSN that is shown in a message.
func redact(dsn string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "(a DSN that does not parse)"
	}
	if cfg.Passwd != "" {
		cfg.Passwd = "xxxxx"
	}
	return cfg.FormatDSN()
}

// noServerError says what was tried and how to get a server.
func noServerError(tried []string) error {
	var b strings.Builder
	b.WriteString("dbtest: no MySQL/MariaDB server for tests.\nTried:\n")
	for _, s := range tried {
		b.WriteString("  - " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n    ") + "\n")
	}
	b.WriteString("Get one in any of these ways:\n" +
		"  - point the tests at a server you have (the user needs CREATE and DROP DATABASE):\n" +
		"      RINGJOB_MYSQL_DSN='user:password@tcp(host:3306)/' go test ./...\n" +
		"  - start MariaDB or MySQL on 127.0.0.1:3306 with user root and no password\n" +
		"  - install MariaDB so the tests start their own throwaway server:\n" +
		"      sudo apt-get install -y mariadb-server   (macOS: brew install mariadb)\n")
	return fmt.Errorf("%s", b.String())
}

// randomHex returns n random bytes as 2n hex digits.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails since Go 1.24
	return hex.EncodeToString(b)
}
