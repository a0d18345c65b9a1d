package main

import (
	"archive/zip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "bootstrap")
	if err := os.WriteFile(src, []byte("#!binary"), 0o700); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "fn.zip")
	if err := write(out, []string{src}); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(out)
	zr, err := zip.OpenReader(out)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	if len(zr.File) != 1 || zr.File[0].Name != "bootstrap" || zr.File[0].Mode().Perm() != 0o755 {
		t.Fatalf("entries %+v", zr.File)
	}
	rc, _ := zr.File[0].Open()
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "#!binary" {
		t.Fatalf("content %q", b)
	}
	if err := write(out, []string{src}); err != nil {
		t.Fatal(err)
	}
	if second, _ := os.ReadFile(out); string(second) != string(first) {
		t.Fatal("the same input gave a different zip")
	}
	if err := write(filepath.Join(dir, "bad.zip"), []string{dir}); err == nil {
		t.Fatal("zipping a directory succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.zip")); !os.IsNotExist(err) {
		t.Fatal("a failed write left a zip behind")
	}
}
