package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"
	"slices"

	"alpnib.dev/ic/internal/leb128"
	"alpnib.dev/ic/principal"
)

// RequestID is the representation-independent hash of a request's content,
// the name under which the IC tracks a call and the thing a sender signs.
type RequestID [32]byte

// String is the lower-case hex form used in logs and state-tree paths.
func (r RequestID) String() string { return hex.EncodeToString(r[:]) }

// Representation-independent hashing (interface spec, "Representation
// independent hashing of structured data"): every value hashes to SHA-256 of
// its encoding, a map to SHA-256 of the sorted concatenation of
// H(key) || H(value) over its entries.
//
// HashValue accepts the Go forms the IC's request contents are made of:
//
//	string                       text (UTF-8)
//	[]byte, principal.Principal  blob
//	uint, uint8..uint64          nat, as unsigned LEB128
//	*big.Int (non-negative)      nat
//	int, int8..int64             int, as signed LEB128
//	[]any, []string, [][]byte, [][][]byte   array: H(concat of element hashes)
//	map[string]any, map[any]any  map (keys must be strings)
//
// Signed Go integers hash as signed LEB128 even when non-negative, so pass
// unsigned types for nat fields such as ingress_expiry.
func HashValue(v any) ([32]byte, error) {
	switch x := v.(type) {
	case string:
		return sha256.Sum256([]byte(x)), nil
	case []byte:
		return sha256.Sum256(x), nil
	case principal.Principal:
		return sha256.Sum256(x.Bytes()), nil
	case uint64:
		return sha256.Sum256(leb128.AppendUnsigned(nil, x)), nil
	case uint:
		return sha256.Sum256(leb128.AppendUnsigned(nil, uint64(x))), nil
	case uint32:
		return sha256.Sum256(leb128.AppendUnsigned(nil, uint64(x))), nil
	case uint16:
		return sha256.Sum256(leb128.AppendUnsigned(nil, uint64(x))), nil
	case uint8:
		return sha256.Sum256(leb128.AppendUnsigned(nil, uint64(x))), nil
	case int64:
		return sha256.Sum256(leb128.AppendSigned(nil, x)), nil
	case int:
		return sha256.Sum256(leb128.AppendSigned(nil, int64(x))), nil
	case int32:
		return sha256.Sum256(leb128.AppendSigned(nil, int64(x))), nil
	case int16:
		return sha256.Sum256(leb128.AppendSigned(nil, int64(x))), nil
	case int8:
		return sha256.Sum256(leb128.AppendSigned(nil, int64(x))), nil
	case big.Int: // what the CBOR decoder yields for a bignum
		return HashValue(&x)
	case *big.Int:
		if x.Sign() < 0 {
			return [32]byte{}, fmt.Errorf("hash value: negative *big.Int %s is not a nat", x)
		}
		return sha256.Sum256(leb128.AppendUnsignedBig(nil, x)), nil
	case []string:
		return hashArray(len(x), func(i int) any { return x[i] })
	case [][]byte:
		return hashArray(len(x), func(i int) any { return x[i] })
	case [][][]byte:
		return hashArray(len(x), func(i int) any { return x[i] })
	case []any:
		return hashArray(len(x), func(i int) any { return x[i] })
	case map[string]any:
		return HashOfMap(x)
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := k.(string)
			if !ok {
				return [32]byte{}, fmt.Errorf("hash value: map key %v is %T, want string", k, k)
			}
			m[ks] = e
		}
		return HashOfMap(m)
	default:
		return [32]byte{}, fmt.Errorf("hash value: unsupported type %T", v)
	}
}

func hashArray(n int, at func(int) any) ([32]byte, error) {
	h := sha256.New()
	for i := range n {
		e, err := HashValue(at(i))
		if err != nil {
			return [32]byte{}, fmt.Errorf("element %d: %w", i, err)
		}
		h.Write(e[:])
	}
	var out [32]byte
	h.Sum(out[:0])
	return out, nil
}

// HashOfMap is the representation-independent hash of a map; for a request's
// content it is the request id.
func HashOfMap(m map[string]any) (RequestID, error) {
	pairs := make([][64]byte, 0, len(m))
	for k, v := range m {
		var p [64]byte
		kh := sha256.Sum256([]byte(k))
		vh, err := HashValue(v)
		if err != nil {
			return RequestID{}, fmt.Errorf("field %q: %w", k, err)
		}
		copy(p[:32], kh[:])
		copy(p[32:], vh[:])
		pairs = append(pairs, p)
	}
	return hashPairs(pairs), nil
}

func hashPairs(pairs [][64]byte) RequestID {
	slices.SortFunc(pairs, func(a, b [64]byte) int { return bytes.Compare(a[:], b[:]) })
	h := sha256.New()
	for i := range pairs {
		h.Write(pairs[i][:])
	}
	var out RequestID
	h.Sum(out[:0])
	return out
}
