package childproc

import "syscall"

// childAttr makes the kernel kill a child when its parent dies, so an
// interrupted run leaves no orderpaid processes behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
