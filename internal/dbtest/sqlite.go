package dbtest

import (
	"path/filepath"
	"testing"
)

// SQLitePath returns the path of a SQLite file that does not exist yet, in a
// directory of its own under t.TempDir(), so it and its -wal and -shm files
// are removed when the test ends.
func SQLitePath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "ringjob.db")
}
