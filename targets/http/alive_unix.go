//go:build unix

package httptarget

import (
	"errors"
	"net"
	"syscall"
)

// connAlive reports whether an idle keep-alive connection is still open:
// a peek that does not wait sees nothing to read. An executor that closed
// the connection (its idle timeout, a restart) shows an end of file or a
// reset; a request written on such a connection would fail after the
// executor may or may not have read it.
func connAlive(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := true
	var b [1]byte
	err = raw.Read(func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// EAGAIN: nothing to read, open. Anything else: closed (n == 0),
		// reset, or bytes nobody asked for.
		alive = errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK)
		return true // never wait for readability
	})
	return err == nil && alive
}
