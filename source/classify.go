package source

import (
	"encoding/binary"
	"math/bits"
)

// blockMasks classify the 64 bytes of a block: bit i of each mask is set
// when byte i is that character.
type blockMasks struct {
	quote, backslash uint64
	open, close      uint64 // '{' or '[', '}' or ']'
}

// classifyGeneric classifies b[0:64] eight bytes at a time; classify uses
// it where no vector instructions are available.
func classifyGeneric(b []byte, m *blockMasks) {
	_ = b[63]
	*m = blockMasks{}
	for w := 0; w < 8; w++ {
		x := binary.LittleEndian.Uint64(b[w*8:])
		y := x | 0x2020202020202020 // '[' and ']' become '{' and '}'
		shift := uint(w * 8)
		m.quote |= gather(zeroBytes(x^0x2222222222222222)) << shift
		m.backslash |= gather(zeroBytes(x^0x5c5c5c5c5c5c5c5c)) << shift
		m.open |= gather(zeroBytes(y^0x7b7b7b7b7b7b7b7b)) << shift
		m.close |= gather(zeroBytes(y^0x7d7d7d7d7d7d7d7d)) << shift
	}
}

// newlinesGeneric returns the mask of the '\n' bytes of b[0:64], eight
// bytes at a time.
func newlinesGeneric(b []byte) uint64 {
	_ = b[63]
	var m uint64
	for w := 0; w < 8; w++ {
		x := binary.LittleEndian.Uint64(b[w*8:])
		m |= gather(zeroBytes(x^0x0a0a0a0a0a0a0a0a)) << uint(w*8)
	}
	return m
}

// zeroBytes sets the high bit of exactly the bytes of z that are zero.
func zeroBytes(z uint64) uint64 {
	const low7 = 0x7f7f7f7f7f7f7f7f
	return ^(((z & low7) + low7) | z | low7)
}

// gather packs the high bits of the eight bytes of m into its low byte.
func gather(m uint64) uint64 { return ((m >> 7) * 0x0102040810204080) >> 56 }

// escaped returns the bits of the bytes that a backslash escapes, given
// the block's backslashes; carry says the block's first byte is escaped by
// a backslash ending the previous block, and is set for the next one.
func escaped(backslash uint64, carry *bool) uint64 {
	var esc uint64
	if *carry {
		esc = 1
		backslash &^= 1 // an escaped backslash escapes nothing
	}
	*carry = false
	for backslash != 0 {
		p := bits.TrailingZeros64(backslash)
		if p == 63 {
			*carry = true
			break
		}
		esc |= 1 << (p + 1)
		backslash &^= 3 << p
	}
	return esc
}

// prefixXor sets bit i to the parity of the bits 0…i of x: over the
// quotes of a block, the bytes inside strings (with the opening quote).
func prefixXor(x uint64) uint64 {
	x ^= x << 1
	x ^= x << 2
	x ^= x << 4
	x ^= x << 8
	x ^= x << 16
	x ^= x << 32
	return x
}
