//go:build !linux && !darwin && !dragonfly && !freebsd && !netbsd && !openbsd && !windows

package main

// isTTY reports whether fd is a terminal. On this platform the command has
// no way to tell a terminal from another character device such as
// /dev/null, so it answers false: unlock then needs -yes, which is the
// safe side (it never waits for an answer nobody can give).
func isTTY(uintptr) bool { return false }
