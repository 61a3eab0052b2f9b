//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package main

import (
	"syscall"
	"unsafe"
)

// isTTY reports whether fd is a terminal: whether it answers the TIOCGETA
// ioctl (get the terminal's settings), as golang.org/x/term does. Other
// character devices, /dev/null among them, refuse it.
func isTTY(fd uintptr) bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCGETA, uintptr(unsafe.Pointer(&t)))
	return errno == 0
}
