//go:build !amd64

package source

// hasAVX2 is false: classify is portable here.
var hasAVX2 = false

// classify classifies b[0:64] into m.
func classify(b []byte, m *blockMasks) { classifyGeneric(b, m) }

// newlines returns the mask of the '\n' bytes of b[0:64].
func newlines(b []byte) uint64 { return newlinesGeneric(b) }
