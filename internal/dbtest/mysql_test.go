package dbtest

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// open opens dsn for the length of the test.
func open(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// parseDSN parses a DSN that MySQL or MySQLServerDSN returned.
func parseDSN(t *testing.T, dsn string) *mysql.Config {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("parse %q: %v", dsn, err)
	}
	return cfg
}

// schemaExists asks the server whether a database exists.
func schemaExists(t *testing.T, db *sql.DB, name string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	if err := db.QueryRowContext(ctx,
		"SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&n); err != nil {
		t.Fatalf("look for database %s: %v", name, err)
	}
	return n == 1
}

func TestMySQL(t *testing.T) {
	t.Parallel()

	t.Run("creates a new empty utf8mb4 database with the promised options", func(t *testing.T) {
		t.Parallel()
		dsn := MySQL(t)
		cfg := parseDSN(t, dsn)
		if !strings.HasPrefix(cfg.DBName, "ringjob_test_testmysql_creates_") || len(cfg.DBName) > 64 {
			t.Errorf("database name %q: want ringjob_test_testmysql_creates_..., at most 64 characters", cfg.DBName)
		}
		if cfg.ParseTime || !cfg.MultiStatements || !cfg.InterpolateParams {
			t.Errorf("DSN %s: want parseTime=false, multiStatements=true, interpolateParams=true", dsn)
		}

		db := open(t, dsn)
		ctx := context.Background()
		var current, charset string
		if err := db.QueryRowContext(ctx, "SELECT DATABASE(), @@character_set_database").Scan(&current, &charset); err != nil {
			t.Fatal(err)
		}
		if current != cfg.DBName || charset != "utf8mb4" {
			t.Errorf("connected to %q (%s), want %q (utf8mb4)", current, charset, cfg.DBName)
		}
		var tables int
		if err := db.QueryRowContext(ctx,
			"SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?", current).Scan(&tables); err != nil || tables != 0 {
			t.Errorf("tables in a new database: %d, %v; want 0", tables, err)
		}

		const text = "héllo 🙂"
		if _, err := db.ExecContext(ctx, "CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(10)); INSERT INTO t VALUES (1, ?)", text); err != nil {
			t.Fatalf("two statements in one call: %v", err)
		}
		var s string
		if err := db.QueryRowContext(ctx, "SELECT s FROM t WHERE id = 1").Scan(&s); err != nil || s != text {
			t.Errorf("read back %q, %v; want %q", s, err, text)
		}
	})

	t.Run("drops the database when the test ends", func(t *testing.T) {
		t.Parallel()
		server := open(t, MySQLServerDSN(t))
		var name string
		t.Run("inner", func(t *testing.T) {
			name = parseDSN(t, MySQL(t)).DBName
			if !schemaExists(t, server, name) {
				t.Fatalf("database %s does not exist during the test", name)
			}
		})
		if name == "" {
			t.Fatal("inner test did not get a database")
		}
		if schemaExists(t, server, name) {
			t.Errorf("database %s still exists after the test ended", name)
		}
	})

	t.Run("gives each call its own database", func(t *testing.T) {
		t.Parallel()
		a, b := parseDSN(t, MySQL(t)).DBName, parseDSN(t, MySQL(t)).DBName
		if a == b {
			t.Errorf("two calls both got %s", a)
		}
	})
}

func TestMySQLServerDSN(t *testing.T) {
	t.Parallel()
	dsn := MySQLServerDSN(t)
	if cfg := parseDSN(t, dsn); cfg.DBName != "" || !cfg.MultiStatements {
		t.Errorf("server DSN %s: want no database and multiStatements=true", dsn)
	}
	var current sql.NullString
	if err := open(t, dsn).QueryRowContext(context.Background(), "SELECT DATABASE()").Scan(&current); err != nil || current.Valid {
		t.Errorf("SELECT DATABASE() = %v, %v; want NULL", current, err)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}

	t.Run("uses RINGJOB_MYSQL_DSN when set", func(t *testing.T) {
		t.Parallel()
		s, err := resolve(env(map[string]string{EnvDSN: MySQLServerDSN(t)}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.admin.Close() })
		if s.own != nil || !strings.HasPrefix(s.source, EnvDSN) {
			t.Errorf("source %q, throwaway %v; want %s and no throwaway", s.source, s.own, EnvDSN)
		}
	})

	t.Run("fails when RINGJOB_MYSQL_DSN does not answer and hides its password", func(t *testing.T) {
		t.Parallel()
		_, err := resolve(env(map[string]string{EnvDSN: "root:s3cret@tcp(127.0.0.1:1)/x"}))
		if err == nil {
			t.Fatal("no error")
		}
		msg := err.Error()
		if !strings.Contains(msg, EnvDSN+"=") || !strings.Contains(msg, "unset it") || strings.Contains(msg, "s3cret") {
			t.Errorf("message should name %s, say to unset it, and hide the password:\n%s", EnvDSN, msg)
		}
	})

	t.Run("fails when RINGJOB_MYSQL_DSN does not parse", func(t *testing.T) {
		t.Parallel()
		_, err := resolve(env(map[string]string{EnvDSN: "not a dsn"}))
		if err == nil || !strings.Contains(err.Error(), "parse DSN") {
			t.Errorf("got %v, want a parse error", err)
		}
	})
}

func TestNoServerError(t *testing.T) {
	t.Parallel()
	msg := noServerError([]string{"root@tcp(127.0.0.1:3306)/: connection refused", "throwaway mariadbd: mariadbd not found"}).Error()
	for _, want := range []string{
		"connection refused",
		"mariadbd not found",
		"RINGJOB_MYSQL_DSN='user:password@tcp(host:3306)/' go test ./...",
		"start MariaDB or MySQL on 127.0.0.1:3306",
		"apt-get install -y mariadb-server",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
}
