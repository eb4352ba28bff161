package candid

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"

	"alpnib.dev/ic/internal/leb128"
)

// EncodeValues encodes values as a message of the given argument types,
// with the type table built as the reference encoder builds it. Each value
// must match its type: the same Kind (a Value of KindNat for nat, …),
// records with a value for every field that is not opt, null or reserved
// (absent ones are encoded as null), variants with one case of the type.
func EncodeValues(types []*Type, values []Value) ([]byte, error) {
	if len(types) != len(values) {
		return nil, fmt.Errorf("candid: %d types for %d values", len(types), len(values))
	}
	for _, t := range types {
		if err := t.Check(); err != nil {
			return nil, err
		}
	}
	out, err := encodeHeader(types)
	if err != nil {
		return nil, err
	}
	for i, t := range types {
		if out, err = appendValue(out, t, values[i], 0); err != nil {
			return nil, fmt.Errorf("candid: argument %d: %w", i, err)
		}
	}
	return out, nil
}

func appendValue(b []byte, t *Type, v Value, depth int) ([]byte, error) {
	t = t.Resolved()
	if depth > MaxDepth {
		return nil, fmt.Errorf("value nests deeper than %d levels", MaxDepth)
	}
	if v.Kind != t.Kind && !(t.Kind == KindReserved) {
		return nil, fmt.Errorf("value of kind %s for type %s", v.Kind, t)
	}
	switch t.Kind {
	case KindNull, KindReserved:
		return b, nil
	case KindBool:
		if v.Bool {
			return append(b, 1), nil
		}
		return append(b, 0), nil
	case KindNat:
		n := bigOrZero(v.Big)
		if n.Sign() < 0 {
			return nil, fmt.Errorf("negative nat %s", n)
		}
		return leb128.AppendUnsignedBig(b, n), nil
	case KindInt:
		return leb128.AppendSignedBig(b, bigOrZero(v.Big)), nil
	case KindNat8, KindNat16, KindNat32, KindNat64:
		size := fixedSize(t.Kind)
		if size < 8 && v.Uint>>(8*size) != 0 {
			return nil, fmt.Errorf("%d does not fit in %s", v.Uint, t.Kind)
		}
		return appendFixed(b, v.Uint, size), nil
	case KindInt8, KindInt16, KindInt32, KindInt64:
		size := fixedSize(t.Kind)
		if size < 8 {
			lim := int64(1) << (8*size - 1)
			if v.Int < -lim || v.Int >= lim {
				return nil, fmt.Errorf("%d does not fit in %s", v.Int, t.Kind)
			}
		}
		return appendFixed(b, uint64(v.Int), size), nil
	case KindFloat32:
		return binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(v.Float))), nil
	case KindFloat64:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Float)), nil
	case KindText:
		if !utf8.ValidString(v.Text) {
			return nil, fmt.Errorf("text is not valid UTF-8")
		}
		b = leb128.AppendUnsigned(b, uint64(len(v.Text)))
		return append(b, v.Text...), nil
	case KindPrincipal, KindService:
		return appendPrincipal(b, v.Bytes)
	case KindFunc:
		b, err := appendPrincipal(append(b, 1), v.Bytes)
		if err != nil {
			return nil, err
		}
		b = leb128.AppendUnsigned(b, uint64(len(v.Text)))
		return append(b, v.Text...), nil
	case KindOpt:
		if v.Opt == nil {
			return append(b, 0), nil
		}
		return appendValue(append(b, 1), t.Elem, *v.Opt, depth+1)
	case KindVec:
		if v.Bytes != nil {
			if e := t.Elem.Resolved(); e.Kind != KindNat8 {
				return nil, fmt.Errorf("blob value for %s", t)
			}
			b = leb128.AppendUnsigned(b, uint64(len(v.Bytes)))
			return append(b, v.Bytes...), nil
		}
		b = leb128.AppendUnsigned(b, uint64(len(v.Elems)))
		var err error
		for _, e := range v.Elems {
			if b, err = appendValue(b, t.Elem, e, depth+1); err != nil {
				return nil, err
			}
		}
		return b, nil
	case KindRecord:
		var err error
		for _, f := range t.Fields {
			fv, ok := findFieldValue(v.Fields, f.ID)
			if !ok {
				mv, optional := missingValue(f.Type)
				if !optional {
					return nil, fmt.Errorf("record field %d (%s) has no value", f.ID, f.Name)
				}
				fv = mv
			}
			if b, err = appendValue(b, f.Type, fv, depth+1); err != nil {
				return nil, err
			}
		}
		return b, nil
	case KindVariant:
		if len(v.Fields) != 1 {
			return nil, fmt.Errorf("variant value with %d cases", len(v.Fields))
		}
		for i, f := range t.Fields {
			if f.ID == v.Fields[0].ID {
				return appendValue(leb128.AppendUnsigned(b, uint64(i)), f.Type, v.Fields[0].Value, depth+1)
			}
		}
		return nil, fmt.Errorf("variant case %d is not in %s", v.Fields[0].ID, t)
	}
	return nil, fmt.Errorf("cannot encode a value of type %s", t)
}

func findFieldValue(fs []FieldValue, id uint32) (Value, bool) {
	for _, f := range fs {
		if f.ID == id {
			return f.Value, true
		}
	}
	return Value{}, false
}

func appendFixed(b []byte, u uint64, size int) []byte {
	for i := 0; i < size; i++ {
		b = append(b, byte(u>>(8*i)))
	}
	return b
}

func appendPrincipal(b []byte, raw []byte) ([]byte, error) {
	if len(raw) > maxPrincipalLen {
		return nil, fmt.Errorf("principal of %d bytes is longer than %d", len(raw), maxPrincipalLen)
	}
	b = append(b, 1)
	b = leb128.AppendUnsigned(b, uint64(len(raw)))
	return append(b, raw...), nil
}
