package main

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestPasswordFromItsOwnVariable(t *testing.T) {
	c, err := loadConfig("", env(map[string]string{
		"RINGJOB_DATABASE_URL":      "mysql://ringjob@db.example:3306/ringjob?tls=skip-verify",
		"RINGJOB_DATABASE_PASSWORD": "p@ss/w:rd",
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	dsn, err := mysqlURLForTest(c.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	if dsn != "ringjob|p@ss/w:rd|db.example:3306|ringjob|skip-verify" {
		t.Fatalf("got %q", dsn)
	}
	if strings.Contains(redact(c.DatabaseURL), "w:rd") {
		t.Fatalf("redact shows the password: %s", redact(c.DatabaseURL))
	}
}

func TestPasswordVariableNeedsAUserWithoutPassword(t *testing.T) {
	for _, u := range []string{"sqlite://./x.db", "mysql://db.example/ringjob", "mysql://u:old@db.example/ringjob"} {
		_, err := loadConfig("", env(map[string]string{"RINGJOB_DATABASE_URL": u, "RINGJOB_DATABASE_PASSWORD": "x"}), nil)
		if err == nil || !strings.Contains(err.Error(), "RINGJOB_DATABASE_PASSWORD") {
			t.Errorf("%s: want an error naming RINGJOB_DATABASE_PASSWORD, got %v", u, err)
		}
	}
}

func TestStopGraceFromEnvironment(t *testing.T) {
	c, err := loadConfig("", env(map[string]string{"RINGJOB_STOP_GRACE": "45s"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Scheduler.StopGrace != 45*time.Second {
		t.Fatalf("stop grace %s, want 45s", c.Scheduler.StopGrace)
	}
	if _, err := loadConfig("", env(map[string]string{"RINGJOB_STOP_GRACE": "soon"}), nil); err == nil || !strings.Contains(err.Error(), "RINGJOB_STOP_GRACE") {
		t.Fatalf("want an error naming RINGJOB_STOP_GRACE, got %v", err)
	}
}

// mysqlURLForTest splits a mysql:// URL the way the store reads it.
func mysqlURLForTest(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	pw, _ := u.User.Password()
	return strings.Join([]string{u.User.Username(), pw, u.Host, strings.TrimPrefix(u.Path, "/"), u.Query().Get("tls")}, "|"), nil
}

func TestThroughputSettings(t *testing.T) {
	t.Parallel()
	write := func(t *testing.T, yaml string) string {
		p := filepath.Join(t.TempDir(), "ringjob.yaml")
		require.NoError(t, os.WriteFile(p, []byte(yaml), 0o600))
		return p
	}
	c, err := loadConfig(write(t, "database_url: sqlite://x.db\n"), env(nil), nil)
	require.NoError(t, err)
	require.False(t, c.API.Pprof, "profiles are off by default")

	c, err = loadConfig(write(t, "database_url: sqlite://x.db\napi:\n  pprof: true\nexecutors:\n  max_connections_per_executor: 8\n"), env(nil), nil)
	require.NoError(t, err)
	require.True(t, c.API.Pprof)
	require.Equal(t, 8, c.Executors.MaxConnectionsPerExecutor)

	c, err = loadConfig(write(t, "database_url: sqlite://x.db\n"), env(map[string]string{"RINGJOB_PPROF": "true"}), nil)
	require.NoError(t, err)
	require.True(t, c.API.Pprof)

	_, err = loadConfig(write(t, "database_url: sqlite://x.db\n"), env(map[string]string{"RINGJOB_PPROF": "yes please"}), nil)
	require.ErrorContains(t, err, "RINGJOB_PPROF")

	_, err = loadConfig(write(t, "database_url: sqlite://x.db\nexecutors:\n  max_connections_per_executor: -1\n"), env(nil), nil)
	require.ErrorContains(t, err, "executors.max_connections_per_executor")
}

func TestRetentionSettings(t *testing.T) {
	t.Parallel()
	write := func(t *testing.T, yaml string) string {
		p := filepath.Join(t.TempDir(), "ringjob.yaml")
		require.NoError(t, os.WriteFile(p, []byte(yaml), 0o600))
		return p
	}
	c, err := loadConfig(write(t, "database_url: sqlite://x.db\n"), env(nil), nil)
	require.NoError(t, err)
	require.Equal(t, 30*24*time.Hour, c.Retention.Runs.D(), "runs are kept 30 days by default")
	require.Equal(t, 400*24*time.Hour, c.Reports.Keep.D())

	c, err = loadConfig(write(t, "database_url: sqlite://x.db\nretention:\n  runs: 90d\n  logs: 36h\n  groups:\n    billing: {runs: 400d}\n"), env(nil), nil)
	require.NoError(t, err)
	require.Equal(t, 90*24*time.Hour, c.Retention.Runs.D())
	require.Equal(t, 36*time.Hour, c.Retention.Logs.D())
	require.Equal(t, 400*24*time.Hour, c.Retention.Groups["billing"].Runs.D())

	for yaml, field := range map[string]string{
		"retention:\n  runs: 7d\n  logs: 30d\n":      "retention.logs",
		"retention:\n  runs: soon\n":                 "soon",
		"retention:\n  partitioned: true\n":          "retention.partitioned",
		"reports:\n  keep: 1h\n":                     "reports.keep",
		"retention:\n  groups:\n    x: {runs: 1m}\n": "retention.groups.x.runs",
	} {
		_, err := loadConfig(write(t, "database_url: sqlite://x.db\n"+yaml), env(nil), nil)
		require.ErrorContains(t, err, field, yaml)
	}
}

// A config file's mistakes are all named by their key path and line, never
// by Go type names, and the command exits 1 without starting.
func TestConfigErrorsNameTheKeyPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ringjob.yaml")
	require.NoError(t, os.WriteFile(path, []byte("scheduler:\n  lock_partitons: 3\n  stop_grace: 3x\nlisten: [1]\nlog:\n  level: {a: 1}\n"), 0o600))
	var out, errb bytes.Buffer
	require.Equal(t, 1, run([]string{"migrate", "--config", path}, &out, &errb))
	msg := errb.String()
	require.Contains(t, msg, "scheduler.lock_partitons: unknown key (line 2)")
	require.Contains(t, msg, `scheduler.stop_grace: want a duration (e.g. 30s), got the text "3x" (line 3)`)
	require.Contains(t, msg, "listen: want a string, got a list (line 4)")
	require.Contains(t, msg, "log.level: want a string, got a mapping (line 6)")
	require.NotContains(t, msg, "main.")
	require.NotContains(t, msg, "!!")
	require.Empty(t, out.String())
}

func TestDatabaseTLSSettingsAreChecked(t *testing.T) {
	const db = "mysql://ringjob@db.example:3306/ringjob"
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"RINGJOB_DATABASE_URL": db, "RINGJOB_DATABASE_TLS_MODE": "verify"}, `database_tls_mode must be disable, require or verify-full, got "verify"`},
		{map[string]string{"RINGJOB_DATABASE_URL": "sqlite://./x.db", "RINGJOB_DATABASE_TLS_CA_FILE": "/ca.pem"}, "database_tls_mode and database_tls_ca_file need a mysql:// or postgres:// database_url"},
		{map[string]string{"RINGJOB_DATABASE_URL": db, "RINGJOB_DATABASE_TLS_MODE": "require", "RINGJOB_DATABASE_TLS_CA_FILE": "/ca.pem"}, "database_tls_ca_file is set but database_tls_mode is require"},
		{map[string]string{"RINGJOB_DATABASE_URL": db + "?tls=true", "RINGJOB_DATABASE_TLS_MODE": "verify-full"}, "database_url has a tls parameter and database_tls_mode/database_tls_ca_file are set too"},
	} {
		_, err := loadConfig("", env(c.env), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: want an error containing %q, got %v", c.env, c.want, err)
		}
	}
	c, err := loadConfig("", env(map[string]string{"RINGJOB_DATABASE_URL": db, "RINGJOB_DATABASE_TLS_CA_FILE": "/ca.pem"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.DatabaseTLSCAFile != "/ca.pem" {
		t.Fatalf("database_tls_ca_file %q from RINGJOB_DATABASE_TLS_CA_FILE", c.DatabaseTLSCAFile)
	}
}

// postgres:// and postgresql:// select PostgreSQL; the password variable,
// the Secrets Manager ARN and the TLS settings apply to them as to mysql://.
func TestPostgresURLs(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"postgres://ringjob@db.example:5432/ringjob", "postgresql://ringjob@db.example/ringjob?sslmode=require"} {
		c, err := loadConfig("", env(map[string]string{"RINGJOB_DATABASE_URL": u, "RINGJOB_DATABASE_PASSWORD": "p@ss/w:rd",
			"RINGJOB_DATABASE_PASSWORD_SECRET_ARN": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:db"}), nil)
		require.NoError(t, err, u)
		parsed, err := url.Parse(c.DatabaseURL)
		require.NoError(t, err)
		pw, _ := parsed.User.Password()
		require.Equal(t, "p@ss/w:rd", pw, u)
		require.NotContains(t, redact(c.DatabaseURL), "w:rd")
	}
	_, err := loadConfig("", env(map[string]string{"RINGJOB_DATABASE_URL": "postgres://u@db.example/r?sslmode=require", "RINGJOB_DATABASE_TLS_MODE": "verify-full"}), nil)
	require.ErrorContains(t, err, "database_url has a sslmode parameter and database_tls_mode")
	_, err = loadConfig("", env(map[string]string{"RINGJOB_DATABASE_URL": "postgres://u:old@db.example/r", "RINGJOB_DATABASE_PASSWORD": "x"}), nil)
	require.ErrorContains(t, err, "RINGJOB_DATABASE_PASSWORD")
	_, err = loadConfig("", env(map[string]string{"RINGJOB_DATABASE_URL": "pgsql://u@db.example/r"}), nil)
	require.ErrorContains(t, err, "database_url must be sqlite://PATH, mysql://USER:PASS@HOST:PORT/DB or postgres://")
}
