package fencesql_test

import "syscall"

// procAttr runs a server as cred's user (nil: this process's), and makes
// the kernel SIGKILL it when the test binary dies (a panic, a -timeout), so
// that no server outlives its test. Go does not end the OS thread that
// started the child while tests run, which is what Pdeathsig is tied to;
// Go sets it after the credentials, which would otherwise clear it.
func procAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
}
