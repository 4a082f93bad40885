//go:build !linux

package kubeharness

import "syscall"

// procAttr puts a child in its own process group, so that stop reaches
// any child of it too.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
