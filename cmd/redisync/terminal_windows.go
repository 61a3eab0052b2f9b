//go:build windows

package main

import "syscall"

// isTTY reports whether fd is a console: whether GetConsoleMode accepts
// it, as golang.org/x/term does. NUL and pipes are not consoles.
func isTTY(fd uintptr) bool {
	var mode uint32
	return syscall.GetConsoleMode(syscall.Handle(fd), &mode) == nil
}
