package dbtest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

const envHelper = "RINGJOB_DBTEST_HELPER"

// TestThrowawayInUse checks the throwaway server when the helper's tests run
// with RINGJOB_DBTEST_FORCE_THROWAWAY=1.
func TestThrowawayInUse(t *testing.T) {
	if force, _ := strconv.ParseBool(os.Getenv(EnvForceThrowaway)); !force {
		t.Skip("set " + EnvForceThrowaway + "=1 to run the tests on a throwaway mariadbd")
	}
	t.Parallel()
	MySQL(t)
	tw := theServer.own
	if tw == nil {
		t.Fatalf("the tests use %s, want a throwaway", theServer.source)
	}
	if !strings.HasPrefix(filepath.Base(tw.dir), throwawayPrefix+strconv.Itoa(os.Getpid())+"-") ||
		filepath.Dir(tw.dir) != filepath.Clean(os.TempDir()) {
		t.Errorf("data directory %s: want %s/%s<pid>-*", tw.dir, os.TempDir(), throwawayPrefix)
	}
	if !processAlive(tw.cmd.Process.Pid) {
		t.Errorf("mariadbd %d does not run", tw.cmd.Process.Pid)
	}
}

// TestThrowaway runs this test binary as a child that starts a throwaway
// mariadbd, and checks what happens to the server when the child ends.
func TestThrowaway(t *testing.T) {
	if testing.Short() {
		t.Skip("starts mariadbd in child processes")
	}
	if _, err := findProgram("mariadbd"); err != nil {
		t.Skipf("no mariadbd: %v", err)
	}
	t.Parallel()

	t.Run("Main stops the server and removes its directory", func(t *testing.T) {
		t.Parallel()
		cmd := helperCommand(t, "return")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("child: %v\n%s\n%s", err, out, stderr.String())
		}
		dir, pid := parseHelperLine(t, string(out))
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("directory %s is still there (%v)", dir, err)
		}
		if processAlive(pid) {
			t.Errorf("mariadbd %d still runs", pid)
		}
	})

	t.Run("the server dies with a killed test process and a later run removes its directory", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("only Linux has Pdeathsig")
		}
		t.Parallel()
		cmd := helperCommand(t, "block")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(stdout)
		line, err := r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "dbtest-helper ") {
			rest, _ := io.ReadAll(r)
			_ = cmd.Wait()
			t.Fatalf("child did not start a server (%v):\n%s%s\n%s", err, line, rest, stderr.String())
		}
		dir, pid := parseHelperLine(t, line)
		if !processAlive(pid) {
			t.Fatalf("mariadbd %d does not run", pid)
		}

		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		deadline := time.Now().Add(10 * time.Second)
		for processAlive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("mariadbd %d outlived its killed test process by 10 s", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("directory of the killed run: %v", err)
		}

		sweepStale(filepath.Dir(dir))
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("sweepStale left %s (%v)", dir, err)
		}
	})
}

// helperCommand runs TestHelperProcess in a child with a forced throwaway.
func helperCommand(t *testing.T, mode string) *exec.Cmd {
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperProcess$", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), envHelper+"="+mode, EnvForceThrowaway+"=1")
	return cmd
}

// TestHelperProcess is the child of TestThrowaway: it starts the throwaway
// server, prints its directory and pid, and then returns or blocks.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(envHelper)
	if mode == "" {
		t.Skip("run by TestThrowaway")
	}
	MySQL(t)
	tw := theServer.own
	if tw == nil {
		t.Fatalf("the child uses %s, want a throwaway", theServer.source)
	}
	fmt.Printf("dbtest-helper dir=%s pid=%d\n", tw.dir, tw.cmd.Process.Pid)
	if mode == "block" {
		<-t.Context().Done() // the parent kills this process first
	}
}

func parseHelperLine(t *testing.T, out string) (dir string, pid int) {
	t.Helper()
	for line := range strings.Lines(out) {
		if _, err := fmt.Sscanf(line, "dbtest-helper dir=%s pid=%d", &dir, &pid); err == nil {
			return dir, pid
		}
	}
	t.Fatalf("no dbtest-helper line in child output:\n%s", out)
	return "", 0
}
