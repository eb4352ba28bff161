package candid

import "math/big"

// appendLEB appends v as unsigned LEB128.
func appendLEB(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// appendSLEB appends v as signed LEB128.
func appendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// appendBigLEB appends a non-negative big integer as unsigned LEB128.
func appendBigLEB(b []byte, n *big.Int) []byte {
	if n.IsUint64() {
		return appendLEB(b, n.Uint64())
	}
	words := n.Bits()
	bits := n.BitLen()
	for i := 0; i < bits; i += 7 {
		c := byte(bitsAt(words, i, 7))
		if i+7 < bits {
			c |= 0x80
		}
		b = append(b, c)
	}
	return b
}

// appendBigSLEB appends a big integer as signed LEB128.
func appendBigSLEB(b []byte, n *big.Int) []byte {
	if n.IsInt64() {
		return appendSLEB(b, n.Int64())
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
		b = append(b, c)
	}
	return b
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

// lebGroupsToBig builds the integer whose little-endian 7-bit groups are the
// low bits of p (every byte but the last has its high bit set), in linear
// time.
func lebGroupsToBig(p []byte) *big.Int {
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
