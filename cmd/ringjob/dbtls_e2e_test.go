package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue makes a server certificate for dnsName, and its RSA key (PKCS #1,
// which every mariadbd TLS library reads).
func (ca *testCA) issue(t *testing.T, dnsName string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}

func lookProgram(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range []string{"/usr/sbin", "/usr/local/sbin", "/usr/bin"} {
		if _, err := os.Stat(filepath.Join(d, name)); err == nil {
			return filepath.Join(d, name)
		}
	}
	t.Skipf("%s not found: the database TLS test needs MariaDB installed", name)
	return ""
}

// startTLSMariaDB starts a throwaway mariadbd that serves TLS with the
// given certificate and refuses plaintext (require_secure_transport), as
// RDS does with the database module's parameter group. It returns the port.
func startTLSMariaDB(t *testing.T, caPEM, certPEM, keyPEM []byte) int {
	t.Helper()
	mariadbd, install := lookProgram(t, "mariadbd"), lookProgram(t, "mariadb-install-db")
	dir := t.TempDir()
	for name, b := range map[string][]byte{"ca.pem": caPEM, "server.pem": certPEM, "server-key.pem": keyPEM} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o600))
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "tmp"), 0o700))
	user := []string{}
	if os.Geteuid() == 0 {
		user = []string{"--user=root"} // mariadbd refuses root unless told
	}
	out, err := exec.Command(install, append([]string{"--no-defaults", "--datadir=" + filepath.Join(dir, "data"),
		"--auth-root-authentication-method=normal", "--skip-test-db"}, user...)...).CombinedOutput()
	require.NoError(t, err, "mariadb-install-db: %s", out)
	port := freePort(t)
	cmd := exec.Command(mariadbd, append([]string{"--no-defaults", "--datadir=" + filepath.Join(dir, "data"),
		"--socket=" + filepath.Join(dir, "s"), fmt.Sprintf("--port=%d", port), "--bind-address=127.0.0.1",
		"--tmpdir=" + filepath.Join(dir, "tmp"), "--log-error=" + filepath.Join(dir, "mariadbd.log"),
		"--pid-file=" + filepath.Join(dir, "pid"), "--skip-name-resolve", "--innodb-buffer-pool-size=32M",
		"--ssl-ca=" + filepath.Join(dir, "ca.pem"), "--ssl-cert=" + filepath.Join(dir, "server.pem"),
		"--ssl-key=" + filepath.Join(dir, "server-key.pem"), "--require-secure-transport=ON"}, user...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	// Up once the port answers the MySQL handshake; the socket (no TLS
	// needed there) creates the schema.
	deadline := time.Now().Add(60 * time.Second)
	for {
		db, err := sql.Open("mysql", "root@unix("+filepath.Join(dir, "s")+")/?timeout=2s")
		require.NoError(t, err)
		_, err = db.Exec("CREATE DATABASE IF NOT EXISTS ringjob")
		db.Close()
		if err == nil {
			return port
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "mariadbd.log"))
			t.Fatalf("mariadbd exited: %v\n%s", err, log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "mariadbd.log"))
			t.Fatalf("mariadbd did not start: %v\n%s", err, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestDatabaseTLSVerifyFull: against a MariaDB that serves a certificate of
// its own CA for the name "localhost" and refuses plaintext, as RDS does.
// verify-full with that CA connects (and the connection is encrypted, as
// the server reports it); a CA that did not sign the certificate, a host
// name it does not carry, and plaintext are refused, each with an error
// saying what to change. Two stores with different CAs in one process do
// not take each other's configuration. The real binary migrates over it.
func TestDatabaseTLSVerifyFull(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a MariaDB server")
	}
	t.Parallel()
	ca := newTestCA(t, "ringjob test database CA")
	other := newTestCA(t, "some other CA")
	certPEM, keyPEM := ca.issue(t, "localhost")
	port := startTLSMariaDB(t, ca.pem, certPEM, keyPEM)
	dir := t.TempDir()
	caFile, otherFile, junkFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "other.pem"), filepath.Join(dir, "junk.pem")
	require.NoError(t, os.WriteFile(caFile, ca.pem, 0o644))
	require.NoError(t, os.WriteFile(otherFile, other.pem, 0o644))
	require.NoError(t, os.WriteFile(junkFile, []byte("not a certificate\n"), 0o644))
	byName := fmt.Sprintf("mysql://root@localhost:%d/ringjob", port)
	byIP := fmt.Sprintf("mysql://root@127.0.0.1:%d/ringjob", port)
	log := logrus.NewEntry(logrus.New())

	open := func(env map[string]string) (func(), error) {
		cfg, err := loadConfig("", func(k string) string { return env[k] }, nil)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		st, err := openDatabase(ctx, cfg, log)
		if err != nil {
			return nil, err
		}
		var cipher string
		require.NoError(t, st.DB().QueryRowContext(ctx, "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'Ssl_cipher'").Scan(&cipher))
		require.NotEmpty(t, cipher, "the server reports no TLS cipher on the connection")
		return func() { st.Close() }, nil
	}

	t.Run("verify-full with the CA connects", func(t *testing.T) {
		closeIt, err := open(map[string]string{"RINGJOB_DATABASE_URL": byName, "RINGJOB_DATABASE_TLS_CA_FILE": caFile})
		require.NoError(t, err)
		closeIt()
		closeIt, err = open(map[string]string{"RINGJOB_DATABASE_URL": byName, "RINGJOB_DATABASE_TLS_MODE": "verify-full", "RINGJOB_DATABASE_TLS_CA_FILE": caFile})
		require.NoError(t, err)
		closeIt()
	})
	t.Run("require encrypts without checking", func(t *testing.T) {
		closeIt, err := open(map[string]string{"RINGJOB_DATABASE_URL": byIP, "RINGJOB_DATABASE_TLS_MODE": "require"})
		require.NoError(t, err)
		closeIt()
	})
	t.Run("the URL's own tls parameter still works", func(t *testing.T) {
		closeIt, err := open(map[string]string{"RINGJOB_DATABASE_URL": byIP + "?tls=skip-verify"})
		require.NoError(t, err)
		closeIt()
	})
	t.Run("a CA that did not sign the certificate is refused", func(t *testing.T) {
		_, err := open(map[string]string{"RINGJOB_DATABASE_URL": byName, "RINGJOB_DATABASE_TLS_CA_FILE": otherFile})
		require.Error(t, err)
		require.Contains(t, err.Error(), "certificate signed by unknown authority")
		require.Contains(t, err.Error(), "not signed by a CA in database_tls_ca_file "+otherFile)
	})
	t.Run("the system CAs do not know a private CA", func(t *testing.T) {
		_, err := open(map[string]string{"RINGJOB_DATABASE_URL": byName, "RINGJOB_DATABASE_TLS_MODE": "verify-full"})
		require.Error(t, err)
		require.Contains(t, err.Error(), "not signed by a CA in the system's CAs")
	})
	t.Run("a host name the certificate does not carry is refused", func(t *testing.T) {
		_, err := open(map[string]string{"RINGJOB_DATABASE_URL": byIP, "RINGJOB_DATABASE_TLS_CA_FILE": caFile})
		require.Error(t, err)
		require.Contains(t, err.Error(), "x509: cannot validate certificate for 127.0.0.1")
		require.Contains(t, err.Error(), "database_url's host must be a name the database's certificate carries")
	})
	t.Run("plaintext is refused by the server", func(t *testing.T) {
		// The same user connects over TLS above: only the transport
		// differs. MariaDB answers "access denied".
		for _, env := range []map[string]string{
			{"RINGJOB_DATABASE_URL": byName},
			{"RINGJOB_DATABASE_URL": byName, "RINGJOB_DATABASE_TLS_MODE": "disable"},
		} {
			_, err := open(env)
			require.Error(t, err)
			require.Contains(t, err.Error(), "Access denied")
			require.Contains(t, err.Error(), "the connection was not encrypted: if the database requires TLS")
		}
	})
	t.Run("a missing or unparseable CA file is named", func(t *testing.T) {
		_, err := open(map[string]string{"RINGJOB_DATABASE_URL": byName, "RINGJOB_DATABASE_TLS_CA_FILE": filepath.Join(dir, "absent.pem")})
		require.ErrorContains(t, err, "database_tls_ca_file: open "+filepath.Join(dir, "absent.pem")+": no such file or directory")
		_, err = open(map[string]string{"RINGJOB_DATABASE_URL": byName, "RINGJOB_DATABASE_TLS_CA_FILE": junkFile})
		require.ErrorContains(t, err, "database_tls_ca_file "+junkFile+": no PEM certificate in it")
	})
	t.Run("stores with different CAs do not share a configuration", func(t *testing.T) {
		// Concurrently and repeatedly: a name registered process-wide
		// would let one take the other's CA.
		errs := make(chan error, 20)
		for i := range 20 {
			go func() {
				env := map[string]string{"RINGJOB_DATABASE_URL": byName, "RINGJOB_DATABASE_TLS_CA_FILE": caFile}
				if i%2 == 1 {
					env["RINGJOB_DATABASE_TLS_CA_FILE"] = otherFile
				}
				closeIt, err := open(env)
				switch {
				case i%2 == 0 && err != nil:
					errs <- fmt.Errorf("store %d with the right CA: %w", i, err)
				case i%2 == 1 && err == nil:
					closeIt()
					errs <- fmt.Errorf("store %d with the wrong CA connected", i)
				default:
					if closeIt != nil {
						closeIt()
					}
					errs <- nil
				}
			}()
		}
		for range 20 {
			require.NoError(t, <-errs)
		}
	})
	t.Run("ringjob migrate over verify-full", func(t *testing.T) {
		cmd := exec.Command(ringjobBinary(t), "migrate")
		cmd.Env = append(os.Environ(), "RINGJOB_DATABASE_URL="+byName, "RINGJOB_DATABASE_TLS_CA_FILE="+caFile)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		cmd = exec.Command(ringjobBinary(t), "migrate")
		cmd.Env = append(os.Environ(), "RINGJOB_DATABASE_URL="+byName, "RINGJOB_DATABASE_TLS_CA_FILE="+otherFile)
		out, err = cmd.CombinedOutput()
		require.Error(t, err)
		require.Contains(t, string(out), "not signed by a CA in database_tls_ca_file")
	})
}
