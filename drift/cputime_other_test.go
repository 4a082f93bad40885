//go:build !unix

package drift_test

import "time"

// processCPU is not available here; benchmarks report 0 CPU time.
func processCPU() time.Duration { return 0 }
