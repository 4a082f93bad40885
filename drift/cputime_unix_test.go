//go:build unix

package drift_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time this process has used (user + system,
// all threads, GC included). On a shared machine it measures the work a
// benchmark does better than wall time, which includes waiting for a CPU.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
