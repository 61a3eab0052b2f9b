//go:build !windows

package main

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) this process has used
// so far.
func processCPU() time.Duration { return rusageCPU(syscall.RUSAGE_SELF) }

func rusageCPU(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
