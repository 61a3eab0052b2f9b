//go:build unix

package redistest

import (
	"os"
	"syscall"
)

// The signals Pause and Resume send.
var (
	sigStop os.Signal = syscall.SIGSTOP
	sigCont os.Signal = syscall.SIGCONT
)
