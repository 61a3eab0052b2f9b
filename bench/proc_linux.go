package main

import "syscall"

// serverProcAttr puts redis-server in its own process group, so that a
// Ctrl-C at the terminal reaches the tool (which stops the server after
// the scenario in progress) and not the server in mid-measurement, and has
// the kernel kill the server if the tool dies without stopping it.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
