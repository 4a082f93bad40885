//go:build unix

package policy

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used (user + system). Benchmarks
// report it beside wall time because the machine they run on is shared.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
