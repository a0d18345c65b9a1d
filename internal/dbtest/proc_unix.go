//go:build unix && !linux

package dbtest

import (
	"errors"
	"os/exec"
	"syscall"
)

// dieWithParent does nothing here: only Linux has Pdeathsig. A server left
// by a killed test process keeps running; sweepStale leaves its directory.
func dieWithParent(*exec.Cmd) {}

// processAlive reports whether pid runs.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
