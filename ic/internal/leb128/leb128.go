// Package leb128 encodes and decodes the LEB128 integers the IC uses for nat
// leaves in state trees (such as /time) and in request-id hashing.
package leb128

import (
	"errors"
	"math/big"
)

// AppendUnsigned appends n as unsigned LEB128, shortest form.
func AppendUnsigned(out []byte, n uint64) []byte {
	for {
		b := byte(n & 0x7f)
		n >>= 7
		if n == 0 {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

// AppendUnsignedBig appends a non-negative big integer as unsigned LEB128.
func AppendUnsignedBig(out []byte, n *big.Int) []byte {
	if n.IsUint64() {
		return AppendUnsigned(out, n.Uint64())
	}
	x := new(big.Int).Set(n)
	low := new(big.Int)
	mask := big.NewInt(0x7f)
	for {
		b := byte(low.And(x, mask).Uint64())
		x.Rsh(x, 7)
		if x.Sign() == 0 {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
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
