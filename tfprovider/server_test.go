package tfprovider_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/client"
	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/tfprovider"
)

// terraformMissing is why the acceptance tests cannot run here ("" when
// they can).
var terraformMissing string

func TestMain(m *testing.M) {
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if tf == "" {
		tf, _ = exec.LookPath("terraform")
	}
	if tf == "" {
		terraformMissing = "no terraform binary on the PATH (install Terraform >= 1.11, or set TF_ACC_TERRAFORM_PATH to one)"
	} else if _, err := exec.Command(tf, "version").Output(); err != nil {
		terraformMissing = fmt.Sprintf("terraform at %s does not run (set TF_ACC_TERRAFORM_PATH to another): %v", tf, err)
	} else {
		// terraform-plugin-testing runs only with TF_ACC set, and would
		// download a terraform without TF_ACC_TERRAFORM_PATH: the
		// acceptance tests are part of `go test` wherever terraform is.
		os.Setenv("TF_ACC", "1")
		os.Setenv("TF_ACC_TERRAFORM_PATH", tf)
		os.Setenv("CHECKPOINT_DISABLE", "1")
	}
	dbtest.Main(m, dbtest.IgnoreFasthttp...)
}

// needTerraform skips t, visibly, where terraform is missing.
func needTerraform(t *testing.T) {
	t.Helper()
	if terraformMissing != "" {
		t.Skip("acceptance test skipped: " + terraformMissing)
	}
}

// providers serves the provider in the test process: terraform talks to
// it over the plugin protocol, and nothing is downloaded.
var providers = map[string]func() (tfprotov6.ProviderServer, error){
	"ringjob": providerserver.NewProtocol6WithError(tfprovider.New("test")()),
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// ringjobBinary builds the real server binary once per test process.
func ringjobBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ringjob-tfprovider-bin-*")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "ringjob")
		out, err := exec.Command("go", "build", "-o", binPath, "../cmd/ringjob").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

// server is a `ringjob server` process of one test.
type server struct {
	URL   string
	Token string
	API   *client.Client

	mu  sync.Mutex
	out bytes.Buffer
}

func (s *server) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.Write(p)
}

func (s *server) logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// dialects are the databases the acceptance tests run the server on.
var dialects = []string{"sqlite", "mariadb"}

// startServer starts `ringjob server` on a new database of the dialect,
// with a known admin token, and waits until it is ready.
func startServer(t *testing.T, dialect string) *server {
	t.Helper()
	dbURL := "sqlite://" + dbtest.SQLitePath(t)
	if dialect == "mariadb" {
		dbURL = mysqlURL(t, dbtest.MySQL(t))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	cfg := fmt.Sprintf(`database_url: %q
listen: 127.0.0.1:%d
log: {level: info, format: json}
local:
  commands:
    - name: hello
      argv: ["/bin/echo", "hello"]
`, dbURL, port)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "ringjob.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o600))
	s := &server{URL: fmt.Sprintf("http://127.0.0.1:%d", port), Token: "rj_tfprovider_acceptance_" + strings.ToLower(dialect) + "_token_0123456789"}
	cmd := exec.Command(ringjobBinary(t), "server", "--config", cfgPath)
	cmd.Env = append(os.Environ(), "RINGJOB_ADMIN_TOKEN="+s.Token)
	cmd.Stdout, cmd.Stderr = s, s
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("server log (the end):\n%s", lastLines(s.logs(), 30))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := http.Get(s.URL + "/readyz")
		if err == nil {
			res.Body.Close()
			// This process's own line too: another package's server may
			// have taken the port since it was free.
			if res.StatusCode == http.StatusOK && strings.Contains(s.logs(), "is running") {
				break
			}
		}
		select {
		case <-exited:
			t.Fatalf("the server exited before it was ready:\n%s", s.logs())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server was not ready within 60 s:\n%s", s.logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.API = client.New(s.URL, s.Token, nil)
	return s
}

// providerBlock configures the provider for s.
func (s *server) providerBlock() string {
	return fmt.Sprintf(`
provider "ringjob" {
  url             = %q
  token           = %q
  request_timeout = "30s"
}
`, s.URL, s.Token)
}

// mysqlURL turns dbtest's go-sql-driver DSN into the server's mysql:// URL.
func mysqlURL(t *testing.T, dsn string) string {
	t.Helper()
	m := regexp.MustCompile(`^([^:@]*)(?::([^@]*))?@tcp\(([^)]+)\)/([^?]+)`).FindStringSubmatch(dsn)
	require.NotNil(t, m, "unexpected dsn %q", dsn)
	u := url.URL{Scheme: "mysql", Host: m[3], Path: "/" + m[4]}
	if m[2] != "" {
		u.User = url.UserPassword(m[1], m[2])
	} else {
		u.User = url.User(m[1])
	}
	return u.String()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
