package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// child is a process the orchestrator started. Its output goes to a file in
// the run directory; ready lines are read from stdout.
type child struct {
	name   string
	cmd    *exec.Cmd
	out    string
	exited chan struct{}
	err    error
}

// startChild starts argv with its stdout and stderr in dir/name.log. When
// waitFor is not empty, it waits (up to timeout) for a stdout line that
// contains it.
func startChild(ctx context.Context, dir, name string, env []string, waitFor string, timeout time.Duration, argv ...string) (*child, error) {
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	pr, pw := io.Pipe()
	cmd.Stdout = io.MultiWriter(logf, pw)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, out: logPath, exited: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		pw.Close()
		logf.Close()
		close(c.exited)
	}()
	found := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		seen := false
		for sc.Scan() {
			if !seen && waitFor != "" && strings.Contains(sc.Text(), waitFor) {
				seen = true
				close(found)
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	if waitFor == "" {
		return c, nil
	}
	select {
	case <-found:
		return c, nil
	case <-c.exited:
		return nil, fmt.Errorf("%s exited before it was ready (%v); its log %s ends:\n%s", name, c.err, logPath, tail(logPath, 20))
	case <-time.After(timeout):
		c.stop(5 * time.Second)
		return nil, fmt.Errorf("%s was not ready within %s; its log %s ends:\n%s", name, timeout, logPath, tail(logPath, 20))
	case <-ctx.Done():
		c.stop(5 * time.Second)
		return nil, ctx.Err()
	}
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// stop sends SIGTERM, waits up to grace, then kills the process group.
func (c *child) stop(grace time.Duration) {
	if c == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(grace):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.exited
	}
	// Whatever it left in its group (function processes of the emulator).
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// procStat is what /proc/<pid>/stat says about CPU: the process's own user +
// system time, and that of its children it has waited for.
type procStat struct {
	self, children time.Duration
	ok             bool
}

const clockTicks = 100 // USER_HZ

func readProcStat(pid int) procStat {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return procStat{}
	}
	n := func(k int) int64 { v, _ := strconv.ParseInt(f[k], 10, 64); return v }
	// f[0] is field 3; utime, stime, cutime, cstime are fields 14..17.
	return procStat{
		self:     time.Duration(n(11)+n(12)) * time.Second / clockTicks,
		children: time.Duration(n(13)+n(14)) * time.Second / clockTicks,
		ok:       true,
	}
}

// treeCPU is the CPU of pid and every live descendant, plus what they have
// reaped: a target process and the processes it runs.
func treeCPU(pid int) time.Duration {
	kids := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		kids[pp] = append(kids[pp], p)
	}
	var total time.Duration
	var walk func(int)
	walk = func(p int) {
		st := readProcStat(p)
		total += st.self + st.children
		for _, k := range kids[p] {
			walk(k)
		}
	}
	walk(pid)
	return total
}

// procMemKiB reads VmHWM and VmRSS of a process.
func procMemKiB(pid int) (hwm, rss int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		switch k {
		case "VmHWM":
			hwm = n
		case "VmRSS":
			rss = n
		}
	}
	return hwm, rss
}

// hostCPU returns busy and total CPU seconds of the machine (/proc/stat).
func hostCPU() (busy, all float64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0
	}
	for i, x := range f[1:] {
		if i >= 8 { // guest time is already in user
			break
		}
		v, _ := strconv.ParseFloat(x, 64)
		all += v / clockTicks
		if i != 3 && i != 4 { // idle, iowait
			busy += v / clockTicks
		}
	}
	return busy, all
}
