package source

import "golang.org/x/sys/cpu"

// hasAVX2 is whether classify can use AVX2.
var hasAVX2 = cpu.X86.HasAVX2

// classify64AVX2 classifies the 64 bytes at p into m with AVX2.
//
//go:noescape
func classify64AVX2(p *byte, m *blockMasks)

// classify classifies b[0:64] into m.
func classify(b []byte, m *blockMasks) {
	if hasAVX2 {
		_ = b[63]
		classify64AVX2(&b[0], m)
		return
	}
	classifyGeneric(b, m)
}

// newlines64AVX2 returns the newline mask of the 64 bytes at p.
//
//go:noescape
func newlines64AVX2(p *byte) uint64

// newlines returns the mask of the '\n' bytes of b[0:64].
func newlines(b []byte) uint64 {
	if hasAVX2 {
		_ = b[63]
		return newlines64AVX2(&b[0])
	}
	return newlinesGeneric(b)
}
