package dbtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	// throwawayPrefix starts the name of each throwaway server's directory
	// under os.TempDir(); the owning test process's pid follows it.
	throwawayPrefix = "ringjob-dbtest-mariadb-"

	installTimeout = 60 * time.Second
	startTimeout   = 30 * time.Second
	stopTimeout    = 15 * time.Second
	startAttempts  = 3 // a free port can be taken before mariadbd binds it
)

// errPortTaken means someone else bound the port first; start again.
var errPortTaken = errors.New("port taken by another server")

// programDirs are searched after PATH: /usr/sbin is often missing from it.
var programDirs = []string{"/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin", "/opt/homebrew/bin", "/opt/homebrew/sbin"}

// throwaway is a mariadbd that dbtest started. Everything it has is in dir:
// data/ (its datadir), tmp/ (its tmpdir: concurrent bootstraps that share
// one fail on each other's temporary tables), s (its socket), mariadbd.log
// and mariadbd.pid.
type throwaway struct {
	dir     string
	port    int
	cmd     *exec.Cmd
	exited  chan struct{} // closed once cmd.Wait has returned
	waitErr error         // what cmd.Wait returned; read after exited is closed
}

// dsn is the server-level DSN of the throwaway server.
func (tw *throwaway) dsn() string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/", tw.port)
}

func (tw *throwaway) logPath() string { return filepath.Join(tw.dir, "mariadbd.log") }

func (tw *throwaway) dataDir() string { return filepath.Join(tw.dir, "data") }

// startThrowaway creates a data directory with mariadb-install-db and starts
// mariadbd on it, on a free port of 127.0.0.1, and waits until it answers.
func startThrowaway() (*throwaway, error) {
	sweepStale(os.TempDir())
	mariadbd, err := findProgram("mariadbd")
	if err != nil {
		return nil, err
	}
	installDB, err := findProgram("mariadb-install-db")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", throwawayPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("create directory for mariadbd: %w", err)
	}
	started := false
	defer func() {
		if !started {
			_ = os.RemoveAll(dir)
		}
	}()
	if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o700); err != nil {
		return nil, fmt.Errorf("create tmpdir for mariadbd: %w", err)
	}

	// mariadbd refuses to run as root unless told to; as anyone else it must
	// not be told to switch user.
	asRoot := os.Geteuid() == 0
	// --skip-test-db also leaves out the anonymous users ''@'localhost',
	// which would match a TCP login from 127.0.0.1 before a test's own
	// 'user'@'%' does and refuse it.
	args := []string{"--no-defaults", "--datadir=" + filepath.Join(dir, "data"), "--tmpdir=" + filepath.Join(dir, "tmp"),
		"--auth-root-authentication-method=normal", "--skip-test-db"}
	if asRoot {
		args = append(args, "--user=root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, installDB, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s %s: %w; its output says:\n%s", installDB, strings.Join(args, " "), err, errorLines(string(out), 15))
	}

	for range startAttempts {
		tw, err := launch(mariadbd, dir, asRoot)
		if err == nil {
			started = true
			return tw, nil
		}
		if !errors.Is(err, errPortTaken) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("mariadbd: every free port was taken before it could bind it (%d tries)", startAttempts)
}

// launch starts mariadbd on an installed data directory and waits for it.
func launch(mariadbd, dir string, asRoot bool) (*throwaway, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	tw := &throwaway{dir: dir, port: port, exited: make(chan struct{})}
	logFile, err := os.Create(tw.logPath())
	if err != nil {
		return nil, fmt.Errorf("create mariadbd log: %w", err)
	}
	defer logFile.Close() // the child has its own copy once started

	args := []string{
		"--no-defaults",
		"--datadir=" + tw.dataDir(),
		"--tmpdir=" + filepath.Join(dir, "tmp"),
		"--socket=" + filepath.Join(dir, "s"),
		"--port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1",
		"--pid-file=" + filepath.Join(dir, "mariadbd.pid"),
		"--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_unicode_ci",
		"--innodb-flush-log-at-trx-commit=2", // tests need no durability
	}
	if asRoot {
		args = append(args, "--user=root")
	}
	tw.cmd = exec.Command(mariadbd, args...)
	tw.cmd.Stdout = logFile
	tw.cmd.Stderr = logFile
	dieWithParent(tw.cmd)
	if err := tw.start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", mariadbd, err)
	}
	if err := tw.waitReady(startTimeout); err != nil {
		tw.kill()
		return nil, err
	}
	return tw, nil
}

// start starts the child and waits for it on a goroutine locked to its OS
// thread. Linux sends Pdeathsig when the thread that started the child ends,
// not the process, and Go ends a thread when a goroutine locked to it
// returns; a thread of our own that lives as long as the child means the
// signal comes only when the child has exited already or the process dies.
func (tw *throwaway) start() error {
	startErr := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := tw.cmd.Start(); err != nil {
			startErr <- err
			return
		}
		startErr <- nil
		tw.waitErr = tw.cmd.Wait()
		close(tw.exited)
	}()
	return <-startErr
}

// waitReady pings until the server answers and is ours, it exits, or the
// timeout passes.
func (tw *throwaway) waitReady(timeout time.Duration) error {
	db, err := sql.Open("mysql", tw.dsn()+"?timeout=1s")
	if err != nil {
		return fmt.Errorf("open %s: %w", tw.dsn(), err)
	}
	defer db.Close()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	var pingErr error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		var dataDir string
		pingErr = db.QueryRowContext(ctx, "SELECT @@datadir").Scan(&dataDir)
		cancel()
		if pingErr == nil {
			if !sameDir(dataDir, tw.dataDir()) {
				return fmt.Errorf("%w: 127.0.0.1:%d answers with data directory %s", errPortTaken, tw.port, dataDir)
			}
			return nil
		}
		select {
		case <-tw.exited:
			log := lastLines(readFile(tw.logPath()), 20)
			if strings.Contains(log, "Address already in use") || strings.Contains(log, "Do you already have another server running on port") {
				return fmt.Errorf("%w: 127.0.0.1:%d", errPortTaken, tw.port)
			}
			return fmt.Errorf("mariadbd exited while starting (%v); %s ends:\n%s", tw.waitErr, tw.logPath(), log)
		case <-deadline.C:
			log := lastLines(readFile(tw.logPath()), 20)
			return fmt.Errorf("mariadbd did not answer on 127.0.0.1:%d within %s (last error: %v); %s ends:\n%s",
				tw.port, timeout, pingErr, tw.logPath(), log)
		case <-tick.C:
		}
	}
}

// stop asks the server to shut down, kills it if it takes too long, and
// removes its directory.
func (tw *throwaway) stop() error {
	select {
	case <-tw.exited:
	default:
		if err := tw.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			tw.kill()
			break
		}
		timer := time.NewTimer(stopTimeout)
		select {
		case <-tw.exited:
			timer.Stop()
		case <-timer.C:
			tw.kill()
		}
	}
	if err := os.RemoveAll(tw.dir); err != nil {
		return fmt.Errorf("remove %s: %w", tw.dir, err)
	}
	return nil
}

// kill kills the server and waits until it has exited.
func (tw *throwaway) kill() {
	_ = tw.cmd.Process.Kill()
	<-tw.exited
}

// sweepStale removes throwaway directories under tmp whose test process and
// server are both gone (the test process was killed before it could clean
// up).
func sweepStale(tmp string) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, throwawayPrefix+"*"))
	for _, dir := range dirs {
		pidText, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(dir), throwawayPrefix), "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		if serverPid, err := strconv.Atoi(strings.TrimSpace(readFile(filepath.Join(dir, "mariadbd.pid")))); err == nil && processAlive(serverPid) {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

// findProgram looks for a program in PATH and then in programDirs.
func findProgram(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range programDirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH or %s", name, strings.Join(programDirs, ", "))
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// sameDir reports whether two paths name the same directory.
func sameDir(a, b string) bool {
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	if errA != nil || errB != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return ra == rb
}

// readFile returns a file's content, or "" if it cannot be read.
func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// errorLines returns the lines of s that mention an error, or if none do,
// its last lines; at most n lines either way.
func errorLines(s string, n int) string {
	var errs []string
	for line := range strings.Lines(s) {
		if strings.Contains(strings.ToLower(line), "error") {
			errs = append(errs, strings.TrimRight(line, "\n"))
		}
	}
	if len(errs) == 0 {
		return lastLines(s, n)
	}
	return lastLines(strings.Join(errs, "\n"), n)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
