package imagebuild_test

import (
	"archive/tar"
	"bufio"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/ringjob/ringjob/internal/imagebuild"
)

// MaxSize is the bound on the image (uncompressed, all layers).
const MaxSize = 40 << 20

const version = "imagetest"

var msTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// platforms: the host's by default (`make test`); `make image-test` sets
// RINGJOB_IMAGE_TEST_PLATFORMS=linux/amd64,linux/arm64 to check both.
func platforms() []string {
	if v := os.Getenv("RINGJOB_IMAGE_TEST_PLATFORMS"); v != "" {
		return strings.Split(v, ",")
	}
	return []string{imagebuild.HostPlatform()}
}

// TestImage builds the image as `make image` does, writes it, reads the OCI
// layout back, unpacks the host's image and runs what is in it.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ringjob: not in -short")
	}
	ctx := context.Background()
	idx, images, err := imagebuild.Build(ctx, imagebuild.Options{Module: "../..", Platforms: platforms(), Version: version})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := imagebuild.Write(out, idx, images, "ringjob", version); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ringjob-oci.tar", "oci/index.json", "oci/oci-layout"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("output lacks %s: %v", f, err)
		}
	}

	// Read back what was written, as a registry client or ECS would see it.
	lidx, err := layout.ImageIndexFromPath(filepath.Join(out, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	im, err := lidx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != len(platforms()) {
		t.Fatalf("index has %d manifests, want one per platform %v", len(im.Manifests), platforms())
	}
	var host v1.Image
	for _, d := range im.Manifests {
		if d.Platform == nil || d.Platform.OS != "linux" {
			t.Fatalf("manifest %s has no linux platform", d.Digest)
		}
		img, err := lidx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		checkConfig(t, img, d.Platform.Architecture)
		u, c, err := imagebuild.Size(img)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("linux/%s: %.1f MB uncompressed, %.1f MB compressed", d.Platform.Architecture, float64(u)/1e6, float64(c)/1e6)
		if u >= MaxSize {
			t.Errorf("linux/%s image is %d bytes, want under %d", d.Platform.Architecture, u, MaxSize)
		}
		if "linux/"+d.Platform.Architecture == imagebuild.HostPlatform() {
			host = img
		}
	}
	if host == nil {
		t.Fatalf("no image for the host platform %s", imagebuild.HostPlatform())
	}

	root := unpack(t, host)
	checkFiles(t, root)
	out1 := runInImage(t, root, nil, "version")
	if strings.TrimSpace(out1) != "ringjob "+version {
		t.Errorf("ringjob version printed %q, want %q", out1, "ringjob "+version)
	}
	t.Run("server", func(t *testing.T) { runServer(t, host, root) })
	t.Run("push", func(t *testing.T) { pushAndPull(t, lidx) })
}

func checkConfig(t *testing.T, img v1.Image, arch string) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Architecture != arch || cf.OS != "linux" {
		t.Errorf("config says %s/%s, index says linux/%s", cf.OS, cf.Architecture, arch)
	}
	uid, _, _ := strings.Cut(cf.Config.User, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("image user %q: want a numeric non-root uid (Kubernetes runAsNonRoot needs a number)", cf.Config.User)
	}
	if strings.Join(cf.Config.Entrypoint, " ") != "/ringjob" || strings.Join(cf.Config.Cmd, " ") != "server" {
		t.Errorf("entrypoint %v cmd %v: want /ringjob server", cf.Config.Entrypoint, cf.Config.Cmd)
	}
	if !contains(cf.Config.Env, "RINGJOB_LOG_FORMAT=json") || !contains(cf.Config.Env, "RINGJOB_LISTEN=0.0.0.0:8080") {
		t.Errorf("env %v: want JSON logs and listening on all interfaces", cf.Config.Env)
	}
	if _, ok := cf.Config.ExposedPorts["8080/tcp"]; !ok {
		t.Errorf("port 8080 not exposed: %v", cf.Config.ExposedPorts)
	}
}

func checkFiles(t *testing.T, root string) {
	t.Helper()
	bi, err := buildinfo.ReadFile(filepath.Join(root, "ringjob"))
	if err != nil {
		t.Fatalf("ringjob in the image is not a Go binary: %v", err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" {
		t.Errorf("binary built with CGO_ENABLED=%q: want a static binary", settings["CGO_ENABLED"])
	}
	if !strings.Contains(settings["-tags"], "timetzdata") {
		t.Errorf("binary built with tags %q: want timetzdata (time zones without /usr/share/zoneinfo)", settings["-tags"])
	}
	ca, err := os.ReadFile(filepath.Join(root, "etc/ssl/certs/ca-certificates.crt"))
	if err != nil || strings.Count(string(ca), "BEGIN CERTIFICATE") < 50 {
		t.Errorf("CA bundle missing or short (%d certificates): %v", strings.Count(string(ca), "BEGIN CERTIFICATE"), err)
	}
	passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
	if err != nil || !strings.Contains(string(passwd), fmt.Sprintf("ringjob:x:%d:%d:", imagebuild.UID, imagebuild.UID)) {
		t.Errorf("/etc/passwd lacks the ringjob user: %q %v", passwd, err)
	}
	for _, shell := range []string{"bin/sh", "bin/bash", "usr/bin/sh"} {
		if _, err := os.Stat(filepath.Join(root, shell)); err == nil {
			t.Errorf("image has a shell: %s", shell)
		}
	}
}

// unpack flattens the image's layers into a directory, keeping modes and
// owners (owners only when running as root).
func unpack(t *testing.T, img v1.Image) string {
	t.Helper()
	root := t.TempDir()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			f.Close()
		default:
			t.Fatalf("unexpected entry %s (type %c)", h.Name, h.Typeflag)
		}
		if err := os.Chmod(p, os.FileMode(h.Mode&0o777)|modeBits(h.Mode)); err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(p, h.Uid, h.Gid); err != nil {
				t.Fatal(err)
			}
		}
	}
	// t.TempDir is 0700 for root only; the image user must reach the root.
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

func modeBits(m int64) os.FileMode {
	if m&0o1000 != 0 {
		return os.ModeSticky
	}
	return 0
}

// command runs a program of the image the way a container runtime does:
// inside the unpacked root, as the image's user, with the image's
// environment. Without root it runs the binary in place as this user.
func command(t *testing.T, root string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Log("not root: running the image's binary without chroot, as this user")
		cmd := exec.Command(filepath.Join(root, "ringjob"), args...)
		cmd.Env = env
		cmd.Dir = root
		return cmd
	}
	cmd := exec.Command("/ringjob", args...)
	cmd.Env = env
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: imagebuild.UID, Gid: imagebuild.UID}}
	return cmd
}

func runInImage(t *testing.T, root string, env []string, args ...string) string {
	t.Helper()
	b, err := command(t, root, env, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ringjob %v in the image: %v\n%s", args, err, b)
	}
	return string(b)
}

// runServer starts the image's default command with the image's
// environment (plus a database and a port), waits until it is ready, stops
// it with SIGTERM and expects a clean exit with JSON logs only.
func runServer(t *testing.T, img v1.Image, root string) {
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	db := "sqlite://" + imagebuild.HomeDir + "/ringjob.db"
	if os.Geteuid() != 0 {
		db = "sqlite://" + filepath.Join(t.TempDir(), "ringjob.db")
	}
	env := append(append([]string{}, cf.Config.Env...),
		"RINGJOB_LISTEN=127.0.0.1:"+strconv.Itoa(port), "RINGJOB_DATABASE_URL="+db, "RINGJOB_STOP_GRACE=2s")
	if os.Geteuid() == 0 {
		// The image's working directory and the user's home.
		env = append(env, "HOME="+imagebuild.HomeDir)
	}
	cmd := command(t, root, env, cf.Config.Cmd...)
	if os.Geteuid() == 0 {
		cmd.Dir = cf.Config.WorkingDir
	}
	// JSON logs on stdout, alone; nothing on stderr.
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan []string, 1)
	go func() {
		var ls []string
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			ls = append(ls, sc.Text())
		}
		lines <- ls
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	ready := false
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && !ready; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
		if err == nil {
			resp.Body.Close()
			ready = resp.StatusCode == http.StatusOK
		}
	}
	if !ready {
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("server in the image never became ready; logs:\n%s", strings.Join(<-lines, "\n"))
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("server exited with %v after SIGTERM, want 0", err)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("server still running 30 s after SIGTERM")
	}
	ls := <-lines
	if len(ls) == 0 {
		t.Fatal("server logged nothing")
	}
	if stderr.Len() > 0 {
		t.Errorf("server wrote to stderr: %q", stderr.String())
	}
	for _, l := range ls {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("log line is not JSON: %q", l)
			continue
		}
		if m["msg"] == nil || m["level"] == nil {
			t.Errorf("log line lacks msg or level: %q", l)
		}
		if ts, _ := m["time"].(string); !msTime.MatchString(ts) {
			t.Errorf("log time %q: want RFC 3339 UTC with milliseconds", m["time"])
		}
	}
}

// pushAndPull pushes the index to a registry (go-containerregistry's, on a
// local socket: the real registry protocol) and reads it back by digest.
func pushAndPull(t *testing.T, idx v1.ImageIndex) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref, err := name.ParseReference(strings.TrimPrefix(srv.URL, "http://") + "/ringjob:" + version)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	got, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := idx.Digest()
	if d, _ := got.Digest(); d != want {
		t.Fatalf("pulled index %s, pushed %s", d, want)
	}
	img, err := remote.Image(ref, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: strings.TrimPrefix(imagebuild.HostPlatform(), "linux/")}))
	if err != nil {
		t.Fatalf("pull the host platform's image: %v", err)
	}
	if _, err := img.Layers(); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
