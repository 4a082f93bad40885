package source

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkLoadArchive checks and loads chart archives of growing file
// counts: the cost per file must stay flat (the checks are one pass over
// the uncompressed stream).
func BenchmarkLoadArchive(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		files := map[string]string{}
		for i := range n {
			files[fmt.Sprintf("files/f%04d.yaml", i)] = strings.Repeat("key: value\n", 20)
		}
		data := packageChart(b, "app", "1.0.0", files)
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := loadArchive(data, DefaultMaxChartSize); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
