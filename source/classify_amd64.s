#include "textflag.h"

// MASK sets 64 bits at off(DI): bit i is set when byte i of Y0:Y1 equals
// each byte of the 64-bit constant c.
#define MASK(c, off) \
	MOVQ $c, AX \
	MOVQ AX, X8 \
	VPBROADCASTQ X8, Y8 \
	VPCMPEQB Y8, Y0, Y2 \
	VPCMPEQB Y8, Y1, Y3 \
	VPMOVMSKB Y2, AX \
	VPMOVMSKB Y3, BX \
	SHLQ $32, BX \
	ORQ BX, AX \
	MOVQ AX, off(DI)

// func classify64AVX2(p *byte, m *blockMasks)
TEXT ·classify64AVX2(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ m+8(FP), DI
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1
	MASK(0x2222222222222222, 0)  // '"'
	MASK(0x5c5c5c5c5c5c5c5c, 8)  // '\\'

	// With 0x20 set, '[' and ']' read as '{' and '}'.
	MOVQ $0x2020202020202020, AX
	MOVQ AX, X8
	VPBROADCASTQ X8, Y8
	VPOR Y8, Y0, Y0
	VPOR Y8, Y1, Y1
	MASK(0x7b7b7b7b7b7b7b7b, 16) // '{' or '['
	MASK(0x7d7d7d7d7d7d7d7d, 24) // '}' or ']'
	VZEROUPPER
	RET

// func newlines64AVX2(p *byte) uint64
TEXT ·newlines64AVX2(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1
	MOVQ $0x0a0a0a0a0a0a0a0a, AX
	MOVQ AX, X8
	VPBROADCASTQ X8, Y8
	VPCMPEQB Y8, Y0, Y2
	VPCMPEQB Y8, Y1, Y3
	VPMOVMSKB Y2, AX
	VPMOVMSKB Y3, BX
	SHLQ $32, BX
	ORQ BX, AX
	MOVQ AX, ret+8(FP)
	VZEROUPPER
	RET
