// Command zipfn packs files into a Lambda deployment zip: each file at the
// root of the archive under its base name, executable (mode 0755), with a
// fixed modification time so that the same binary gives the same zip.
//
//	go run ./functions/cmd/zipfn -o bin/functions/hello-arm64.zip bin/functions/hello-arm64/bootstrap
//
// `make functions` uses it, so building functions needs no zip program.
package main

import (
	"archive/zip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// modTime is the fixed time stamp of every entry.
var modTime = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

func main() {
	out := flag.String("o", "", "the zip file to write (required)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: zipfn -o OUT.zip FILE...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := write(*out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "zipfn:", err)
		os.Exit(1)
	}
}

// write creates out with files at its root. On error no partial zip is left.
func write(out string, files []string) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(out), ".zipfn-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	zw := zip.NewWriter(tmp)
	seen := map[string]bool{}
	for _, f := range files {
		name := filepath.Base(f)
		if seen[name] {
			_ = tmp.Close()
			return fmt.Errorf("two files named %q", name)
		}
		seen[name] = true
		if err := add(zw, f, name); err != nil {
			_ = tmp.Close()
			return err
		}
	}
	if err := errors.Join(zw.Close(), tmp.Chmod(0o644), tmp.Close()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}

func add(zw *zip.Writer, path, name string) error {
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: modTime}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, src); err != nil {
		return fmt.Errorf("add %s: %w", path, err)
	}
	return nil
}
