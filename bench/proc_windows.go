//go:build windows

package main

import "syscall"

// serverProcAttr has nothing to set on Windows, where redis-server is
// rarely installed; use -redis there.
func serverProcAttr() *syscall.SysProcAttr { return nil }
