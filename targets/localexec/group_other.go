//go:build unix && !linux

package localexec

import (
	"errors"
	"syscall"
)

// groupAlive reports whether any process of the process group still exists.
// Without /proc, zombies count as alive until their parent reaps them.
func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return !errors.Is(err, syscall.ESRCH)
}
