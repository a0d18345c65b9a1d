package faults_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/store"
)

// database is the server a cluster's replicas share, which the faults
// kill and restart.
type database interface {
	// name is the server program, for the names of faults.
	name() string
	// url is the replicas' database_url.
	url() string
	start()
	// stop sends sig and waits for the server to exit.
	stop(sig syscall.Signal)
	// ringjob opens the replicas' database for the checks (? placeholders).
	ringjob() *sql.DB
}

func (m *mariadb) name() string     { return "mariadbd" }
func (m *mariadb) ringjob() *sql.DB { return m.open("ringjob") }

// postgres is a throwaway PostgreSQL server this test starts, kills and
// restarts on one data directory and port. As root, it runs as the
// postgres user (the server refuses to run as root).
type postgres struct {
	t      *testing.T
	bin    string
	dir    string
	port   int
	cred   *syscall.Credential
	cmd    *exec.Cmd
	exited chan struct{}
}

// postgresProgram finds a PostgreSQL server program (initdb, postgres)
// in Debian's versioned directories or on the PATH.
func postgresProgram(t *testing.T, name string) string {
	t.Helper()
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(matches) > 0 {
		return matches[len(matches)-1]
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	t.Skipf("%s not found: the PostgreSQL fault runs need PostgreSQL's server installed (apt-get install postgresql)", name)
	return ""
}

func startPostgres(t *testing.T) *postgres {
	t.Helper()
	p := &postgres{t: t, bin: postgresProgram(t, "postgres"), port: freePort(t)}
	initdb := postgresProgram(t, "initdb")
	// Not t.TempDir: its parent is private to root, and the server may run
	// as another user.
	dir, err := os.MkdirTemp("", "ringjob-faults-postgres-*")
	require.NoError(t, err)
	p.dir = dir
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skipf("running as root and no postgres user to run the PostgreSQL server as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		require.NoError(t, os.Chown(dir, uid, gid))
	}
	cmd := exec.Command(initdb, "-D", filepath.Join(dir, "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "initdb: %s", out)
	p.start()
	t.Cleanup(func() {
		if p.running() {
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	db := p.open("postgres")
	defer db.Close()
	_, err = db.Exec("CREATE DATABASE ringjob")
	require.NoError(t, err)
	return p
}

func (p *postgres) name() string { return "postgres" }

func (p *postgres) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/ringjob?sslmode=disable", p.port)
}

func (p *postgres) start() {
	p.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		// After a SIGKILL the old server's backends may hold its shared
		// memory for a moment: the new one refuses to start until they
		// have gone, so it is started again until it stays up.
		p.cmd = exec.Command(p.bin, "-D", filepath.Join(p.dir, "data"), "-p", strconv.Itoa(p.port), "-k", p.dir,
			"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=300", "-c", "shared_buffers=128MB")
		log, err := os.OpenFile(filepath.Join(p.dir, "postgres.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o666)
		require.NoError(p.t, err)
		p.cmd.Stdout, p.cmd.Stderr = log, log
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: p.cred}
		require.NoError(p.t, p.cmd.Start())
		p.exited = make(chan struct{})
		go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); log.Close(); close(done) }(p.cmd, p.exited)
		for p.running() {
			db := p.open("postgres")
			err := db.Ping()
			db.Close()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(filepath.Join(p.dir, "postgres.log"))
			p.t.Fatalf("postgres did not start:\n%s", lastLines(string(out), 30))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (p *postgres) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return p.cmd != nil
	}
}

func (p *postgres) stop(sig syscall.Signal) {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(sig))
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		p.t.Fatalf("postgres did not exit after %v", sig)
	}
}

func (p *postgres) open(db string) *sql.DB {
	p.t.Helper()
	d, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=2", p.port, db))
	require.NoError(p.t, err)
	return d
}

func (p *postgres) ringjob() *sql.DB {
	p.t.Helper()
	st, err := store.OpenPostgres(context.Background(), p.url())
	require.NoError(p.t, err)
	return st.DB()
}
