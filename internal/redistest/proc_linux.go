package redistest

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the kernel SIGKILL the redis-server child when the test
// binary dies (a panic or a -timeout), so no orphaned servers keep their
// ports. Go does not end the OS thread that forked the child while tests
// run, which is what Pdeathsig is tied to.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
