package depgraph

import (
	"flag"
	"testing"

	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestMain fails the package's tests if any goroutine is still running after them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
