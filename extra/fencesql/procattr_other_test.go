//go:build unix && !linux

package fencesql_test

import "syscall"

// procAttr runs a server as cred's user (nil: this process's).
func procAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}
