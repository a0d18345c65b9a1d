package imagebuild

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// files lists the regular files of a layer, with their mode and content.
func files(t *testing.T, l interface {
	Uncompressed() (io.ReadCloser, error)
}) map[string]*tar.Header {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out["/"+h.Name] = h
	}
}

// The database's CA bundle goes where the scheduler module's
// database_tls_ca_file looks, readable by the image's user; without one
// the image has no such file (the server then names the setting).
func TestDatabaseCABundleInTheImage(t *testing.T) {
	ca, err := os.ReadFile(filepath.Join("testdata", "rds-like-bundle.pem"))
	if err != nil || strings.Count(string(ca), "BEGIN CERTIFICATE") != 2 {
		t.Fatalf("testdata bundle: %v", err)
	}
	with, err := baseLayer(ca, ca)
	if err != nil {
		t.Fatal(err)
	}
	h := files(t, with)[DatabaseCAPath]
	if h == nil || h.Size != int64(len(ca)) || h.Mode&0o004 == 0 {
		t.Fatalf("%s: %+v, want the bundle (%d bytes), world-readable", DatabaseCAPath, h, len(ca))
	}
	without, err := baseLayer(ca, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := files(t, without)[DatabaseCAPath]; h != nil {
		t.Fatalf("%s is in an image built without a database CA bundle", DatabaseCAPath)
	}

	// A file that is no bundle is refused before anything is compiled.
	junk := filepath.Join(t.TempDir(), "bundle.pem")
	if err := os.WriteFile(junk, []byte("<html>403 Forbidden</html>"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = Build(context.Background(), Options{Module: "../..", Platforms: []string{HostPlatform()}, DatabaseCABundle: junk, Go: "/nonexistent/go"})
	if err == nil || !strings.Contains(err.Error(), "database CA bundle "+junk+" holds no PEM certificate") {
		t.Fatalf("want an error naming the database CA bundle, got %v", err)
	}
}
