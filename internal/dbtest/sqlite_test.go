package dbtest

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"
)

func TestSQLitePath(t *testing.T) {
	t.Parallel()

	t.Run("returns a new file in a directory of its own", func(t *testing.T) {
		t.Parallel()
		a, b := SQLitePath(t), SQLitePath(t)
		if filepath.Dir(a) == filepath.Dir(b) {
			t.Errorf("two calls share a directory: %s and %s", a, b)
		}
		if _, err := os.Stat(a); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("stat %s: got %v, want it not to exist", a, err)
		}
	})

	t.Run("can be opened by modernc sqlite", func(t *testing.T) {
		t.Parallel()
		db, err := sql.Open("sqlite", SQLitePath(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		ctx := context.Background()
		if _, err := db.ExecContext(ctx, "CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT); INSERT INTO t (s) VALUES ('x')"); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 1 {
			t.Fatalf("count rows: got %d, %v; want 1", n, err)
		}
	})
}
