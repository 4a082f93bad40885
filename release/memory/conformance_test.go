package memory_test

import (
	"testing"

	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/releasetest"
)

// The in-memory cluster passes the conformance suite every backend passes,
// so what tests on it show holds on real clusters.
func TestConformance(t *testing.T) {
	releasetest.TestCluster(t, memory.New("conformance"))
}

// So does one sharing its Schemas with other clusters that already hold
// the same objects.
func TestConformanceSharedSchemas(t *testing.T) {
	shared := memory.NewSchemas()
	releasetest.TestCluster(t, memory.New("first", memory.WithSchemas(shared)))
	releasetest.TestCluster(t, memory.New("second", memory.WithSchemas(shared)))
}
