package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
)

// TestMigrateStepAndSchemaGuard: with database_migrations: external a
// replica on an empty database waits (not ready, not exiting) until
// `ringjob migrate` has run, then starts; on a schema a newer release
// migrated, both the server and `ringjob migrate` refuse with a message
// naming the unknown version, and change nothing.
func TestMigrateStepAndSchemaGuard(t *testing.T) {
	t.Parallel()
	dsn := dbtest.MySQL(t)
	dbURL := mysqlURL(t, dsn)
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	cfgPath := filepath.Join(t.TempDir(), "ringjob.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(fmt.Sprintf(
		"database_url: %q\ndatabase_migrations: external\nlisten: 127.0.0.1:%d\nlog: {level: info, format: json}\n", dbURL, port)), 0o600))
	env := append(os.Environ(), "RINGJOB_ADMIN_TOKEN=schema-guard-admin-token-0123456789abcdef")

	var out syncBuf
	srv := exec.Command(ringjobBinary(t), "server", "--config", cfgPath)
	srv.Env, srv.Stdout, srv.Stderr = env, &out, &out
	require.NoError(t, srv.Start())
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	t.Cleanup(func() { _ = srv.Process.Kill() })

	require.Eventually(t, func() bool { return strings.Contains(out.String(), "waiting for the database schema") },
		20*time.Second, 50*time.Millisecond, "no waiting message:\n%s", out.String())
	// It waits: still running, nothing answers yet, several polls later.
	select {
	case err := <-exited:
		t.Fatalf("the server exited while waiting for migrations: %v\n%s", err, out.String())
	case <-time.After(3 * schemaPoll):
	}
	code, _ := httpGet(base + "/readyz")
	require.Zero(t, code, "nothing listens before the schema is there")

	mig := exec.Command(ringjobBinary(t), "migrate", "--config", cfgPath)
	mig.Env = env
	mout, err := mig.CombinedOutput()
	require.NoError(t, err, "%s", mout)
	require.Contains(t, string(mout), "is up to date")

	require.Eventually(t, func() bool { c, _ := httpGet(base + "/readyz"); return c == 200 },
		30*time.Second, 100*time.Millisecond, "the server did not start after ringjob migrate:\n%s", out.String())
	require.Contains(t, out.String(), "database schema is up to date; starting")
	require.NoError(t, srv.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("server did not stop")
	}

	// A newer release migrated the database (a version this build lacks).
	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.ExecContext(context.Background(), "INSERT INTO schema_migrations (version, name, applied_ms) VALUES (9999, '9999_newer_release', 1)")
	require.NoError(t, err)
	var before int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM schema_migrations").Scan(&before))

	for _, args := range [][]string{{"server", "--config", cfgPath}, {"migrate", "--config", cfgPath}} {
		cmd := exec.Command(ringjobBinary(t), args...)
		cmd.Env = env
		done := make(chan struct{})
		var cout []byte
		go func() { cout, err = cmd.CombinedOutput(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("ringjob %s did not refuse the newer schema", args[0])
		}
		require.Error(t, err, "ringjob %s on a newer schema: %s", args[0], cout)
		require.Contains(t, string(cout), "the database schema is newer than this build of Ringjob", "ringjob %s", args[0])
		require.Contains(t, string(cout), "[9999]", "ringjob %s", args[0])
	}
	var after int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM schema_migrations").Scan(&after))
	require.Equal(t, before, after, "nothing migrated")
}

// TestMigrateCreatesTheAppUser: `ringjob migrate --app-user` (as the owner)
// creates the least-privilege user the replicas connect as; a replica then
// runs as that user. Without its password the command refuses and changes
// nothing.
func TestMigrateCreatesTheAppUser(t *testing.T) {
	t.Parallel()
	dsn := dbtest.MySQL(t)
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	user := "rj_mig_" + cfg.DBName[max(0, len(cfg.DBName)-12):]
	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	defer db.Close()
	t.Cleanup(func() { _, _ = db.Exec(fmt.Sprintf("DROP USER IF EXISTS '%s'@'%%'", user)) })

	noPw := exec.Command(ringjobBinary(t), "migrate", "--database-url", mysqlURL(t, dsn), "--app-user", user)
	out, err := noPw.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "RINGJOB_APP_DATABASE_PASSWORD")
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM mysql.user WHERE user = ?", user).Scan(&n))
	require.Zero(t, n, "nothing created without a password")

	mig := exec.Command(ringjobBinary(t), "migrate", "--database-url", mysqlURL(t, dsn), "--app-user", user)
	mig.Env = append(os.Environ(), "RINGJOB_APP_DATABASE_PASSWORD=app-password-0123")
	out, err = mig.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "application user ready")

	token := "app-user-test-admin-token-0123456789abcdef"
	r := startReplica(t, fmt.Sprintf("database_url: \"mysql://%s@%s/%s\"\ndatabase_migrations: external\n", user, cfg.Addr, cfg.DBName),
		"http", http.DefaultClient, "RINGJOB_ADMIN_TOKEN="+token, "RINGJOB_DATABASE_PASSWORD=app-password-0123")
	r.token = token
	code, g := r.call("POST", "/api/v1/groups", map[string]any{"app_name": "app-user", "title": "t", "members": []string{"http://127.0.0.1:1"}}, nil)
	require.Equal(t, 201, code, "%v", g)
	r.stop()
}
