// Package leb128 encodes and decodes the LEB128 integers of the IC: Candid's
// nat, int and every length and type index of its binary format, nat leaves
// in state trees (such as /time), and request-id hashing of numbers. One
// implementation serves them all so that an encoding fix lands everywhere.
package leb128

import (
	"errors"
	"math/big"
)

// AppendUnsigned appends n as unsigned LEB128, shortest form.
func AppendUnsigned(out []byte, n uint64) []byte {
	for n >= 0x80 {
		out = append(out, byte(n)|0x80)
		n >>= 7
	}
	return append(out, byte(n))
}

// AppendSigned appends n as signed LEB128, shortest form.
func AppendSigned(out []byte, n int64) []byte {
	for {
		b := byte(n & 0x7f)
		n >>= 7
		if (n == 0 && b&0x40 == 0) || (n == -1 && b&0x40 != 0) {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

// AppendUnsignedBig appends a non-negative big integer as unsigned LEB128,
// in time linear in its size (it reads 7-bit groups straight out of the
// words instead of shifting a copy).
func AppendUnsignedBig(out []byte, n *big.Int) []byte {
	if n.IsUint64() {
		return AppendUnsigned(out, n.Uint64())
	}
	words := n.Bits()
	bits := n.BitLen()
	for i := 0; i < bits; i += 7 {
		c := byte(bitsAt(words, i, 7))
		if i+7 < bits {
			c |= 0x80
		}
		out = append(out, c)
	}
	return out
}

// AppendSignedBig appends a big integer as signed LEB128, shortest form.
func AppendSignedBig(out []byte, n *big.Int) []byte {
	if n.IsInt64() {
		return AppendSigned(out, n.Int64())
	}
	// Two's complement over enough 7-bit groups: value + 2^(7k) for
	// negatives, with the top group's bit 6 carrying the sign.
	k := (n.BitLen() + 1 + 6) / 7
	v := new(big.Int).Set(n)
	if n.Sign() < 0 {
		v.Add(v, new(big.Int).Lsh(big.NewInt(1), uint(7*k)))
	}
	words := v.Bits()
	for i := 0; i < k; i++ {
		c := byte(bitsAt(words, 7*i, 7))
		if i+1 < k {
			c |= 0x80
		}
		out = append(out, c)
	}
	return out
}

// bitsAt returns n bits (n ≤ 8) of the little-endian word slice from bit i.
func bitsAt(words []big.Word, i, n int) uint {
	const w = 32 << (^uint(0) >> 63)
	var out uint
	for j := 0; j < n; j++ {
		k := i + j
		if k/w < len(words) && words[k/w]>>(uint(k)%w)&1 == 1 {
			out |= 1 << j
		}
	}
	return out
}

// GroupsToBig builds the non-negative integer whose little-endian 7-bit
// groups are the low bits of p (a LEB128 number whose end the caller has
// already found and bounded), in linear time. For a signed number the caller
// subtracts 2^(7·len(p)) when the last group's bit 6 is set.
func GroupsToBig(p []byte) *big.Int {
	nbits := 7 * len(p)
	out := make([]byte, (nbits+7)/8)
	for i, c := range p {
		g := uint(c & 0x7f)
		bit := 7 * i
		out[bit/8] |= byte(g << (bit % 8))
		if bit%8 > 1 {
			out[bit/8+1] |= byte(g >> (8 - bit%8))
		}
	}
	// big-endian for SetBytes
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return new(big.Int).SetBytes(out)
}

// ErrOverflow and ErrTruncated are returned by Unsigned.
var (
	ErrOverflow  = errors.New("LEB128 number overflows 64 bits")
	ErrTruncated = errors.New("LEB128 number truncated")
)

// Unsigned reads an unsigned LEB128 number that fits in 64 bits and returns
// it with the number of bytes read.
func Unsigned(b []byte) (uint64, int, error) {
	var n uint64
	for i := 0; i < len(b); i++ {
		c := b[i]
		if i == 9 && c > 1 {
			return 0, 0, ErrOverflow
		}
		if i > 9 {
			return 0, 0, ErrOverflow
		}
		n |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return n, i + 1, nil
		}
	}
	return 0, 0, ErrTruncated
}
