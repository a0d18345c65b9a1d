//go:build linux

package localexec

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// groupAlive reports whether any process of the process group still runs.
//
// Zombies do not count: they have ended and only wait for their parent to
// reap them. Orphans are reparented to PID 1 or to the nearest child
// subreaper; when that is this process (the scheduler runs as PID 1 in a
// container, or set PR_SET_CHILD_SUBREAPER), nobody else would reap them, so
// the group's zombies whose parent is this process are reaped here (and count
// as alive until they could be). They are
// never a child os/exec waits for: the group's leader is reaped by Cmd.Wait
// before this is called, and the others are not our own children.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	members, err := groupMembers(pgid)
	if err != nil {
		return true // cannot look closer (no /proc): trust kill(2)
	}
	self := os.Getpid()
	alive := false
	for _, m := range members {
		switch {
		case m.state != 'Z' && m.state != 'X':
			alive = true
		case m.ppid == self:
			// A zombie thread-group leader cannot be reaped until its other
			// threads have exited too (wait4 then returns 0): look again later.
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(m.pid, &ws, syscall.WNOHANG, nil); err == nil && pid == 0 {
				alive = true
			}
		}
	}
	return alive
}

type procInfo struct {
	pid, ppid int
	state     byte
}

// groupMembers lists the processes of a process group from /proc.
func groupMembers(pgid int) ([]procInfo, error) {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	var out []procInfo
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) < 3 {
			continue
		}
		pgrp, err1 := strconv.Atoi(string(f[2]))
		ppid, err2 := strconv.Atoi(string(f[1]))
		if err1 != nil || err2 != nil || pgrp != pgid || len(f[0]) != 1 {
			continue
		}
		out = append(out, procInfo{pid: pid, ppid: ppid, state: f[0][0]})
	}
	return out, nil
}
