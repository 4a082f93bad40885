package kubeharness

import "syscall"

// procAttr puts a child in its own process group, so that stop reaches
// any child of it too, and has the kernel kill it if the test binary dies
// without running its cleanup (a go test timeout, a crash).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
