//go:build !linux

package scenario

import "syscall"

// childAttr has nothing to add outside Linux: children of an interrupted run
// must be stopped by hand there.
func childAttr() *syscall.SysProcAttr { return nil }
