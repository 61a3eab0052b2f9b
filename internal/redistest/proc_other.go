//go:build !linux

package redistest

import "os/exec"

// setProcAttr does nothing outside Linux: there is no portable way to tie a
// child's life to ours, so a crashed test binary may leave redis-server
// processes behind there.
func setProcAttr(*exec.Cmd) {}
