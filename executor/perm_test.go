package executor

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFilesArePrivate: run logs hold params and output, so they are
// readable by the executor's user only, as are the directories created for
// them and the callback retry files.
func TestFilesArePrivate(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "logs")
	path := logPath(dir, time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), 42)
	if err := appendFile(path, "db-password=hunter2\n"); err != nil {
		t.Fatal(err)
	}
	e, err := New(WithAdminAddresses("http://127.0.0.1:1"), WithAppName("a"), WithAccessToken("t"), WithLogDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	retry, err := e.persistCallbacks([]byte(`[{"logId":42}]`))
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, filepath.Dir(path): 0o700, path: 0o600, filepath.Dir(retry): 0o700, retry: 0o600} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", p, got, want)
		}
	}
}
