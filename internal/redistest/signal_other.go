//go:build !unix

package redistest

import "os"

// Pause and Resume need SIGSTOP and SIGCONT, which only Unix-like systems
// have; nil makes them fail the test with a clear message.
var (
	sigStop os.Signal
	sigCont os.Signal
)
