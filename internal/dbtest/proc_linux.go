package dbtest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// dieWithParent makes the kernel kill the child when the test process dies,
// however it dies.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// processAlive reports whether pid runs. A zombie does not: in containers
// nothing may reap it.
func processAlive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 || i+2 >= len(stat) {
		return true
	}
	state := stat[i+2]
	return state != 'Z' && state != 'X'
}
