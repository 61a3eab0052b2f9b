//go:build linux

package main

import (
	"os"
	"strconv"
	"syscall"
	"testing"
	"unsafe"
)

// TestIsTerminalPTY: the terminal check says yes to a real terminal, the
// slave side of a pseudo-terminal, so it is not merely always false.
func TestIsTerminalPTY(t *testing.T) {
	t.Parallel()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here (%v): the check's positive case is not tested", err)
	}
	defer m.Close()
	var unlock int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); errno != 0 {
		t.Fatalf("unlockpt: %v", errno)
	}
	var n uint32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); errno != 0 {
		t.Fatalf("ptsname: %v", errno)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.FormatUint(uint64(n), 10), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !isTerminal(s) {
		t.Error("isTerminal(a pseudo-terminal) = false, want true")
	}
}
