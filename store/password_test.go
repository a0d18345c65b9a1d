package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/store"
)

// TestPasswordRereadWhenRefused: with a password source (Secrets Manager in
// production), a password rotated on the server is picked up by the next new
// connection without a restart: the refused connection asks the source to
// read it again, once, and succeeds; connections are not refused for good.
func TestPasswordRereadWhenRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := dbtest.MySQL(t)
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	root, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	defer root.Close()
	user := "rj_pw_" + fmt.Sprint(len(cfg.DBName)) + cfg.DBName[max(0, len(cfg.DBName)-8):]
	_, err = root.ExecContext(ctx, fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY 'first-password'", user))
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = root.ExecContext(context.Background(), fmt.Sprintf("DROP USER IF EXISTS '%s'@'%%'", user))
	})
	_, err = root.ExecContext(ctx, fmt.Sprintf("GRANT ALL ON `%s`.* TO '%s'@'%%'", cfg.DBName, user))
	require.NoError(t, err)

	var mu sync.Mutex
	current, reads, refreshes := "first-password", 0, 0
	cached := ""
	source := func(_ context.Context, refresh bool) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if refresh {
			refreshes++
		}
		if cached == "" || refresh {
			reads++
			cached = current
		}
		return cached, nil
	}
	st, err := store.OpenWith(ctx, fmt.Sprintf("mysql://%s@%s/%s", user, cfg.Addr, cfg.DBName), store.OpenOptions{Password: source})
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	require.Equal(t, 0, refreshes)

	// Secrets Manager rotates the password: the server and the secret change.
	_, err = root.ExecContext(ctx, fmt.Sprintf("ALTER USER '%s'@'%%' IDENTIFIED BY 'second-password'", user))
	require.NoError(t, err)
	mu.Lock()
	current = "second-password"
	mu.Unlock()

	// A new connection (pooled ones are recycled) is refused with the cached
	// password, reads the secret again and gets in.
	st.DB().SetMaxIdleConns(0)
	var n int
	require.NoError(t, st.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&n))
	require.Positive(t, n)
	mu.Lock()
	require.Equal(t, 1, refreshes, "one refresh after the refusal")
	require.Equal(t, 2, reads, "the secret read at start and once after the rotation")
	mu.Unlock()
	require.NoError(t, st.DB().QueryRowContext(ctx, "SELECT 1").Scan(&n))
}
