package idl

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"alpnib.dev/ic/candid"
)

// Numeric literals of Candid text: one literal means a nat, an int8 or a
// float32 depending on the type it is read at, so numbers are kept as written
// until then.

func isHexLiteral(raw string) bool {
	s := strings.TrimLeft(raw, "+-")
	return strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X")
}

func isFloatLiteral(raw string) bool {
	if strings.Contains(raw, ".") {
		return true
	}
	if isHexLiteral(raw) {
		return strings.ContainsAny(raw, "pP")
	}
	return strings.ContainsAny(raw, "eE")
}

var intRanges = map[candid.Kind]struct {
	min, max *big.Int
	signed   bool
}{
	candid.KindNat8:  {big.NewInt(0), big.NewInt(math.MaxUint8), false},
	candid.KindNat16: {big.NewInt(0), big.NewInt(math.MaxUint16), false},
	candid.KindNat32: {big.NewInt(0), big.NewInt(math.MaxUint32), false},
	candid.KindNat64: {big.NewInt(0), new(big.Int).SetUint64(math.MaxUint64), false},
	candid.KindInt8:  {big.NewInt(math.MinInt8), big.NewInt(math.MaxInt8), true},
	candid.KindInt16: {big.NewInt(math.MinInt16), big.NewInt(math.MaxInt16), true},
	candid.KindInt32: {big.NewInt(math.MinInt32), big.NewInt(math.MaxInt32), true},
	candid.KindInt64: {big.NewInt(math.MinInt64), big.NewInt(math.MaxInt64), true},
}

// maxIntegerDigits bounds a literal so a hostile text cannot make big.Int
// parsing quadratic.
const maxIntegerDigits = 10000

func integer(n *vNum, k candid.Kind) (candid.Value, error) {
	if isFloatLiteral(n.raw) {
		return candid.Value{}, errorf(n.pos, "%s is not an integer (type %s)", n.raw, k)
	}
	if len(n.raw) > maxIntegerDigits {
		return candid.Value{}, errorf(n.pos, "integer literal longer than %d characters", maxIntegerDigits)
	}
	s := strings.ReplaceAll(n.raw, "_", "")
	neg := false
	switch {
	case strings.HasPrefix(s, "-"):
		neg, s = true, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	base := 10
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		s, base = s[2:], 16
	}
	x, ok := new(big.Int).SetString(s, base)
	if !ok {
		return candid.Value{}, errorf(n.pos, "malformed number %s", n.raw)
	}
	if neg {
		x.Neg(x)
	}
	switch k {
	case candid.KindNat:
		if x.Sign() < 0 {
			return candid.Value{}, errorf(n.pos, "%s is negative, not a nat", n.raw)
		}
		return candid.Value{Kind: k, Big: x}, nil
	case candid.KindInt:
		return candid.Value{Kind: k, Big: x}, nil
	}
	r := intRanges[k]
	if x.Cmp(r.min) < 0 || x.Cmp(r.max) > 0 {
		return candid.Value{}, errorf(n.pos, "%s is out of range for %s", n.raw, k)
	}
	if r.signed {
		return candid.Value{Kind: k, Int: x.Int64()}, nil
	}
	return candid.Value{Kind: k, Uint: x.Uint64()}, nil
}

func float(n *vNum, k candid.Kind) (candid.Value, error) {
	s := strings.ReplaceAll(n.raw, "_", "")
	if isHexLiteral(s) && !strings.ContainsAny(s, "pP") {
		s += "p0" // Go wants an exponent on hex floats; Candid does not.
	}
	bits := 64
	if k == candid.KindFloat32 {
		bits = 32
	}
	f, err := strconv.ParseFloat(s, bits)
	if err != nil {
		return candid.Value{}, errorf(n.pos, "%s is not a %s: %v", n.raw, k, err)
	}
	return candid.Value{Kind: k, Float: f}, nil
}
