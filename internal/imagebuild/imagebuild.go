// Package imagebuild builds Ringjob's container image without a Docker
// daemon, with go-containerregistry: a static `ringjob` per platform, CA
// certificates, a non-root user, and time zone data (embedded in the binary
// with the timetzdata build tag). The result is a multi-platform OCI image
// index, written as an OCI layout directory and as a tar of it; each
// platform is also written as a `docker load`-able tarball.
//
// The image is what the Dockerfile at the repository root builds, file for
// file: keep the two in step.
package imagebuild

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image holds and how it runs.
const (
	BinaryPath = "/ringjob"
	CAPath     = "/etc/ssl/certs/ca-certificates.crt"
	// DatabaseCAPath holds the database's CA bundle (Options.DatabaseCABundle),
	// the scheduler module's default database_tls_ca_file.
	DatabaseCAPath = "/etc/ringjob/database-ca.pem"
	UID            = 65532
	UserName       = "ringjob"
	HomeDir        = "/home/ringjob" // working directory, writable by the user
	Port           = "8080/tcp"
	// BuildTags: timetzdata embeds the time zone database, so jobs' time
	// zones resolve with no /usr/share/zoneinfo in the image.
	BuildTags = "timetzdata"
)

// Entrypoint and Cmd: `docker run IMAGE` runs the server; `docker run IMAGE
// version` runs another command.
var (
	Entrypoint = []string{BinaryPath}
	Cmd        = []string{"server"}
	// Env: listen on all interfaces, log JSON; everything else comes from
	// RINGJOB_* variables given at run time.
	Env = []string{
		"RINGJOB_LISTEN=0.0.0.0:8080",
		"RINGJOB_LOG_FORMAT=json",
		"SSL_CERT_FILE=" + CAPath,
	}
)

// Options say what to build.
type Options struct {
	// Module is the directory of the Go module (the repository root).
	Module string
	// Platforms, as linux/ARCH (default linux/amd64 and linux/arm64).
	Platforms []string
	// Version is stamped into the binary (main.version) and the labels.
	Version string
	// Revision is the source revision for the labels (optional).
	Revision string
	// CABundle is the PEM file copied to CAPath (default
	// /etc/ssl/certs/ca-certificates.crt of the build machine).
	CABundle string
	// DatabaseCABundle, when set, is a PEM file copied to DatabaseCAPath:
	// the CAs the database's certificate is checked against (on AWS the
	// RDS bundle, which is not among the system CAs).
	DatabaseCABundle string
	// Created is the image's creation time (default: zero, so builds of the
	// same source are identical).
	Created time.Time
	// Go is the go command (default "go").
	Go string
	// Log receives progress lines (may be nil).
	Log io.Writer
}

// DefaultPlatforms are the platforms `make image` builds.
var DefaultPlatforms = []string{"linux/amd64", "linux/arm64"}

// HostPlatform is linux/GOARCH of this machine.
func HostPlatform() string { return "linux/" + runtime.GOARCH }

// Image is one platform's image.
type Image struct {
	Platform v1.Platform
	Image    v1.Image
}

// Build compiles ringjob for every platform and assembles the images and
// their index.
func Build(ctx context.Context, o Options) (v1.ImageIndex, []Image, error) {
	if len(o.Platforms) == 0 {
		o.Platforms = DefaultPlatforms
	}
	if o.CABundle == "" {
		o.CABundle = "/etc/ssl/certs/ca-certificates.crt"
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	ca, err := os.ReadFile(o.CABundle)
	if err != nil {
		return nil, nil, fmt.Errorf("read the CA bundle (install ca-certificates or pass one): %w", err)
	}
	if !bytes.Contains(ca, []byte("BEGIN CERTIFICATE")) {
		return nil, nil, fmt.Errorf("CA bundle %s holds no PEM certificate", o.CABundle)
	}
	var dbCA []byte
	if o.DatabaseCABundle != "" {
		if dbCA, err = os.ReadFile(o.DatabaseCABundle); err != nil {
			return nil, nil, fmt.Errorf("read the database CA bundle: %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(dbCA) {
			return nil, nil, fmt.Errorf("database CA bundle %s holds no PEM certificate", o.DatabaseCABundle)
		}
	}
	base, err := baseLayer(ca, dbCA)
	if err != nil {
		return nil, nil, err
	}
	tmp, err := os.MkdirTemp("", "ringjob-image-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)

	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var images []Image
	for _, p := range o.Platforms {
		plat, err := v1.ParsePlatform(p)
		if err != nil || plat.OS != "linux" || plat.Architecture == "" {
			return nil, nil, fmt.Errorf("platform %q: want linux/ARCH", p)
		}
		bin := filepath.Join(tmp, "ringjob-"+plat.Architecture)
		fmt.Fprintf(o.Log, "  go build ringjob for %s\n", p)
		if err := compile(ctx, o, plat.Architecture, bin); err != nil {
			return nil, nil, err
		}
		img, err := platformImage(o, *plat, base, bin)
		if err != nil {
			return nil, nil, fmt.Errorf("image for %s: %w", p, err)
		}
		images = append(images, Image{Platform: *plat, Image: img})
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: plat}})
	}
	return idx, images, nil
}

func compile(ctx context.Context, o Options, arch, out string) error {
	cmd := exec.CommandContext(ctx, o.Go, "build", "-trimpath", "-tags", BuildTags,
		"-ldflags", "-s -w -X main.version="+o.Version, "-o", out, "./cmd/ringjob")
	cmd.Dir = o.Module
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for linux/%s: %w\n%s", arch, err, b)
	}
	return nil
}

func platformImage(o Options, plat v1.Platform, base v1.Layer, bin string) (v1.Image, error) {
	b, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	app, err := layer([]entry{{path: BinaryPath, mode: 0o755, data: b}})
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, base, app)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = plat.OS, plat.Architecture, plat.Variant
	cf.Created = v1.Time{Time: o.Created}
	cf.Author = "Ringjob"
	cf.Config.Entrypoint = Entrypoint
	cf.Config.Cmd = Cmd
	cf.Config.Env = Env
	cf.Config.User = fmt.Sprintf("%d:%d", UID, UID)
	cf.Config.WorkingDir = HomeDir
	cf.Config.ExposedPorts = map[string]struct{}{Port: {}}
	cf.Config.StopSignal = "SIGTERM"
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":       "ringjob",
		"org.opencontainers.image.description": "Ringjob distributed job scheduler",
		"org.opencontainers.image.version":     o.Version,
	}
	if o.Revision != "" {
		cf.Config.Labels["org.opencontainers.image.revision"] = o.Revision
	}
	cf.History = nil
	return mutate.ConfigFile(img, cf)
}

// baseLayer: CA certificates, the database's CA bundle when given, the user
// and its home, and /tmp.
func baseLayer(ca, dbCA []byte) (v1.Layer, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:Ringjob:%s:/sbin/nologin\n", UserName, UID, UID, HomeDir)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", UserName, UID)
	entries := []entry{
		{path: "/etc/", dir: true, mode: 0o755},
		{path: "/etc/passwd", mode: 0o644, data: []byte(passwd)},
		{path: "/etc/group", mode: 0o644, data: []byte(group)},
		{path: "/etc/ssl/", dir: true, mode: 0o755},
		{path: "/etc/ssl/certs/", dir: true, mode: 0o755},
		{path: CAPath, mode: 0o644, data: ca},
		{path: "/home/", dir: true, mode: 0o755},
		{path: HomeDir + "/", dir: true, mode: 0o700, owner: UID},
		{path: "/tmp/", dir: true, mode: 0o1777},
	}
	if dbCA != nil {
		entries = append(entries, entry{path: path.Dir(DatabaseCAPath) + "/", dir: true, mode: 0o755},
			entry{path: DatabaseCAPath, mode: 0o644, data: dbCA})
	}
	return layer(entries)
}

type entry struct {
	path  string
	dir   bool
	mode  int64
	owner int
	data  []byte
}

// layer makes a gzip OCI layer from entries, with fixed times so the digest
// depends on the content only.
func layer(entries []entry) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: strings.TrimPrefix(e.path, "/"), Mode: e.mode, Uid: e.owner, Gid: e.owner,
			ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

// Write puts the index in dir: an OCI layout in dir/oci, the same as a tar
// in dir/ringjob-oci.tar, and each platform as dir/ringjob-linux-ARCH.tar
// for `docker load` (tagged repo:version).
func Write(dir string, idx v1.ImageIndex, images []Image, repo, version string) ([]string, error) {
	layoutDir := filepath.Join(dir, "oci")
	if err := os.RemoveAll(layoutDir); err != nil {
		return nil, err
	}
	if _, err := layout.Write(layoutDir, idx); err != nil {
		return nil, fmt.Errorf("write OCI layout: %w", err)
	}
	written := []string{layoutDir}
	tarPath := filepath.Join(dir, "ringjob-oci.tar")
	if err := tarDir(layoutDir, tarPath); err != nil {
		return nil, err
	}
	written = append(written, tarPath)
	tag, err := name.NewTag(repo + ":" + version)
	if err != nil {
		return nil, fmt.Errorf("tag %s:%s: %w", repo, version, err)
	}
	for _, im := range images {
		p := filepath.Join(dir, "ringjob-linux-"+im.Platform.Architecture+".tar")
		if err := tarball.WriteToFile(p, tag, im.Image); err != nil {
			return nil, fmt.Errorf("write %s: %w", p, err)
		}
		written = append(written, p)
	}
	return written, nil
}

// tarDir writes the files under dir into a tar at out (an OCI archive).
func tarDir(dir, out string) (err error) {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname = time.Unix(0, 0), 0, 0, "", ""
		if d.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err != nil {
		return fmt.Errorf("tar %s: %w", dir, err)
	}
	return tw.Close()
}

// Size is the image's uncompressed size (all layers) and compressed size
// (what a registry stores and a node pulls).
func Size(img v1.Image) (uncompressed, compressed int64, err error) {
	layers, err := img.Layers()
	if err != nil {
		return 0, 0, err
	}
	for _, l := range layers {
		c, err := l.Size()
		if err != nil {
			return 0, 0, err
		}
		compressed += c
		rc, err := l.Uncompressed()
		if err != nil {
			return 0, 0, err
		}
		n, err := io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return 0, 0, err
		}
		uncompressed += n
	}
	return uncompressed, compressed, nil
}
