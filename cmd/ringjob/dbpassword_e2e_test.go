package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
)

// fakeSecretsManager stands for AWS Secrets Manager (which cannot run here):
// it answers GetSecretValue in the service's JSON 1.1 wire format with an
// RDS-managed secret (JSON with username and password).
type fakeSecretsManager struct {
	mu       sync.Mutex
	user, pw string
	reads    atomic.Int32
}

func (f *fakeSecretsManager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" {
		http.Error(w, `{"__type":"UnknownOperationException"}`, 400)
		return
	}
	var in struct{ SecretId string }
	_ = json.NewDecoder(r.Body).Decode(&in)
	f.mu.Lock()
	val, _ := json.Marshal(map[string]string{"username": f.user, "password": f.pw})
	f.mu.Unlock()
	f.reads.Add(1)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(map[string]any{"ARN": in.SecretId, "Name": "rds-db", "SecretString": string(val), "VersionId": "v1"})
}

// TestRotatedDatabasePasswordIsReread: a replica given
// RINGJOB_DATABASE_PASSWORD and database_password_secret_arn keeps working
// after the password is rotated (on the server and in the secret) and its
// connections are dropped: the refused reconnect reads the secret again.
// Before, a rotated password needed a new deployment.
func TestRotatedDatabasePasswordIsReread(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := dbtest.MySQL(t)
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	root, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	defer root.Close()
	user := "rj_rot_" + cfg.DBName[max(0, len(cfg.DBName)-12):]
	_, err = root.ExecContext(ctx, fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY 'first-password'", user))
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = root.ExecContext(context.Background(), fmt.Sprintf("DROP USER IF EXISTS '%s'@'%%'", user))
	})
	_, err = root.ExecContext(ctx, fmt.Sprintf("GRANT ALL ON `%s`.* TO '%s'@'%%'", cfg.DBName, user))
	require.NoError(t, err)

	sm := &fakeSecretsManager{user: user, pw: "first-password"}
	fake := httptest.NewServer(sm)
	defer fake.Close()

	token := "rotation-test-admin-token-0123456789abcdef"
	r := startReplica(t, fmt.Sprintf("database_url: \"mysql://%s@%s/%s\"\ndatabase_password_secret_arn: arn:aws:secretsmanager:us-east-1:123456789012:secret:rds-db\n",
		user, cfg.Addr, cfg.DBName), "http", http.DefaultClient,
		"RINGJOB_ADMIN_TOKEN="+token, "RINGJOB_DATABASE_PASSWORD=first-password",
		"AWS_ENDPOINT_URL_SECRETS_MANAGER="+fake.URL, "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test")
	r.token = token
	require.Zero(t, sm.reads.Load(), "the injected password is used first")

	// Rotation: the server and the secret get the new password, and the
	// replica's connections are dropped (a pool recycles them anyway).
	_, err = root.ExecContext(ctx, fmt.Sprintf("ALTER USER '%s'@'%%' IDENTIFIED BY 'second-password'", user))
	require.NoError(t, err)
	sm.mu.Lock()
	sm.pw = "second-password"
	sm.mu.Unlock()
	rows, err := root.QueryContext(ctx, "SELECT id FROM information_schema.processlist WHERE user = ?", user)
	require.NoError(t, err)
	var ids []int64
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	rows.Close()
	require.NotEmpty(t, ids)
	for _, id := range ids {
		_, _ = root.ExecContext(ctx, fmt.Sprintf("KILL %d", id))
	}

	require.Eventually(t, func() bool {
		code, _ := r.call("GET", "/api/v1/jobs", nil, nil)
		return code == 200
	}, 30*time.Second, 200*time.Millisecond, "the replica did not get back into the database:\n%s", r.output())
	require.Positive(t, sm.reads.Load(), "the secret was read again")
	require.NotEmpty(t, r.logLines("the database refused its password; read it again from Secrets Manager (rotated)"))
	r.stop()
}
