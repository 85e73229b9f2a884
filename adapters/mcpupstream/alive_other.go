//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package mcpupstream

import "net"

// canPeek: on this platform alive cannot tell an idle connection the
// upstream closed, so the Adapters keep net/http's Transport, whose read
// loop notices the close (keepAliveClient).
const canPeek = false

// alive cannot peek at a socket on this platform.
func alive(net.Conn) bool { return true }
