//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// takeTerminal makes serve the foreground process group of its terminal
// when it was started inside another program's foreground group, as
// `make run` starts it, so that a Ctrl-C reaches the gateway alone. GNU
// make, when it receives SIGINT itself, waits for its recipe and then
// re-raises the signal on itself, so the shell reports status 130 however
// cleanly the gateway stopped; a make that never sees the signal exits
// with the recipe's status, the gateway's 0. (`go run` is the same: it
// exits 1 after an interrupt.)
//
// It does nothing, and returns a restore that does nothing, when stdin is
// not a terminal, when the process is not in the terminal's foreground
// group, or when it already leads its group (a shell with job control
// started it, and gave it the terminal already). Otherwise it moves the
// process into a group of its own and hands that group the terminal;
// restore gives the terminal back to the previous group, and must be
// called before the process exits. An error means nothing changed.
func takeTerminal() (restore func(), err error) {
	noop := func() {}
	fd := int(os.Stdin.Fd())
	fg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil {
		return noop, nil // not a terminal (or no controlling terminal): nothing to take
	}
	own := unix.Getpgrp()
	if fg != own || own == unix.Getpid() {
		return noop, nil
	}
	if err := unix.Setpgid(0, 0); err != nil {
		return noop, err
	}
	if err := setForeground(fd, unix.Getpid()); err != nil {
		_ = unix.Setpgid(0, own)
		return noop, err
	}
	return func() { _ = setForeground(fd, fg) }, nil
}

// setForeground makes pgrp the foreground process group of terminal fd
// (tcsetpgrp). A process outside the foreground group that does so is sent
// SIGTTOU, which would stop it; the signal is ignored for the call.
func setForeground(fd, pgrp int) error {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	return unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, pgrp)
}
