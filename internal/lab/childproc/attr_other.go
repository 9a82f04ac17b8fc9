//go:build !linux

package childproc

import "syscall"

// childAttr has nothing to add outside Linux (Pdeathsig is Linux only):
// children of an interrupted run must be stopped by hand there.
func childAttr() *syscall.SysProcAttr { return nil }
