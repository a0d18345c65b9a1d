//go:build linux

package localexec

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The tests start real processes: the test binary itself, re-executed with
// helperEnv set, so no shell scripts are needed.
const (
	helperEnv = "LOCALEXEC_HELPER"
	// secretEnv is in the scheduler's (the test's) environment and must not
	// reach a process unless InheritEnv is set.
	secretEnv = "LOCALEXEC_TEST_SECRET"
	// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER from <linux/prctl.h>.
	prSetChildSubreaper = 36
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain(os.Args[1:]))
	}
	// Orphaned grandchildren are reparented to the nearest subreaper, else to
	// PID 1. Some sandboxes run a PID 1 that never reaps, which would leave
	// their zombies counted in kill(-pgid, 0) forever. As a subreaper the test
	// process adopts them and the driver reaps the ones of its groups, as it
	// does when the scheduler runs as PID 1 in a container.
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		fmt.Fprintln(os.Stderr, "prctl(PR_SET_CHILD_SUBREAPER):", errno)
		os.Exit(2)
	}
	if err := os.Setenv(secretEnv, "s3cret"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	goleak.VerifyTestMain(m)
}

// helperMain runs the actions in args, in order, stopping at "--" (what
// follows is data, e.g. params passed as the last argument):
//
//	out:TEXT      print TEXT on stdout
//	err:TEXT      print TEXT on stderr
//	partial:TEXT  print TEXT on stdout without a newline
//	spam:N        print N lines of 100 bytes on stdout
//	exit:N        exit with status N
//	sleep:DUR     sleep (time.ParseDuration)
//	ignoreterm    ignore SIGTERM, and have grandchildren spawned later ignore it too
//	pgid          print "pgid N" with the process group id
//	spawn:N       start N grandchildren in the same group that sleep for an hour
//	              (sharing stdout and stderr), wait until each is set up, and
//	              print "gpid PID" for each
//	escape        start a grandchild in a new session (outside the group) that
//	              holds stdout and sleeps for an hour; print "escaped PID"
//	dump:PATH     write {"args": [...], "env": [...]} as JSON to PATH
//	readyfd       write one byte to fd 3 and close it (used by spawn)
func helperMain(args []string) int {
	ignoreTerm := false
	for _, a := range args {
		if a == "--" {
			break
		}
		verb, arg, _ := strings.Cut(a, ":")
		switch verb {
		case "out":
			fmt.Println(arg)
		case "err":
			fmt.Fprintln(os.Stderr, arg)
		case "partial":
			fmt.Print(arg)
		case "spam":
			n, _ := strconv.Atoi(arg)
			line := strings.Repeat("x", 99) + "\n"
			for i := 0; i < n; i++ {
				if _, err := os.Stdout.WriteString(line); err != nil {
					return 97
				}
			}
		case "exit":
			n, _ := strconv.Atoi(arg)
			return n
		case "sleep":
			d, err := time.ParseDuration(arg)
			if err != nil {
				return 98
			}
			time.Sleep(d)
		case "ignoreterm":
			signal.Ignore(syscall.SIGTERM)
			ignoreTerm = true
		case "pgid":
			fmt.Printf("pgid %d\n", syscall.Getpgrp())
		case "spawn":
			n, _ := strconv.Atoi(arg)
			for i := 0; i < n; i++ {
				pid, err := spawnGrandchild(ignoreTerm)
				if err != nil {
					fmt.Fprintln(os.Stderr, "spawn:", err)
					return 96
				}
				fmt.Printf("gpid %d\n", pid)
			}
		case "escape":
			self, _ := os.Executable()
			c := exec.Command(self, "sleep:1h")
			c.Stdout, c.Stderr = os.Stdout, os.Stderr
			c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err := c.Start(); err != nil {
				fmt.Fprintln(os.Stderr, "escape:", err)
				return 96
			}
			fmt.Printf("escaped %d\n", c.Process.Pid)
		case "dump":
			b, _ := json.Marshal(map[string][]string{"args": os.Args[1:], "env": os.Environ()})
			if err := os.WriteFile(arg, b, 0o600); err != nil {
				fmt.Fprintln(os.Stderr, "dump:", err)
				return 95
			}
		case "readyfd":
			f := os.NewFile(3, "ready")
			_, _ = f.Write([]byte{1})
			_ = f.Close()
		default:
			fmt.Fprintf(os.Stderr, "helper: unknown action %q\n", a)
			return 99
		}
	}
	return 0
}

// spawnGrandchild starts a sleeping grandchild in the caller's process group
// and returns once it has set up its signal handling.
func spawnGrandchild(ignoreTerm bool) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	args := []string{"readyfd", "sleep:1h"}
	if ignoreTerm {
		args = append([]string{"ignoreterm"}, args...)
	}
	c := exec.Command(self, args...)
	c.Stdout, c.Stderr = os.Stdout, os.Stderr
	c.ExtraFiles = []*os.File{w}
	err = c.Start()
	w.Close()
	if err != nil {
		return 0, err
	}
	if _, err := r.Read(make([]byte, 1)); err != nil {
		return 0, fmt.Errorf("grandchild %d not ready: %w", c.Process.Pid, err)
	}
	return c.Process.Pid, nil
}
