//go:build linux || darwin || freebsd || netbsd || openbsd

package mcpupstream

import (
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// canPeek: alive can tell an idle connection the upstream closed.
const canPeek = true

// alive reports whether the idle connection conn is still open: the
// upstream has neither closed it nor sent anything on it (an HTTP server
// may write a 408 before closing an idle connection). It peeks at the
// socket without blocking and without consuming a byte: one syscall.
func alive(conn net.Conn) bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var buf [1]byte
	err = raw.Read(func(fd uintptr) bool {
		// EAGAIN: nothing to read, still open. A byte, or 0 bytes (the
		// upstream's FIN), or any other error: not reusable.
		_, _, rerr := unix.Recvfrom(int(fd), buf[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		open = errors.Is(rerr, unix.EAGAIN) || errors.Is(rerr, unix.EWOULDBLOCK)
		return true // never wait for readiness
	})
	return err == nil && open
}
