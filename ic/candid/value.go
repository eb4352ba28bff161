package candid

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"
)

// Value is a dynamically typed Candid value: what DecodeValues returns and
// EncodeValues takes. Kind says which of the other fields is meaningful:
//
//	KindNull, KindReserved     nothing
//	KindBool                   Bool
//	KindNat, KindInt           Big (never nil when decoded)
//	KindNat8 … KindNat64       Uint
//	KindInt8 … KindInt64       Int
//	KindFloat32, KindFloat64   Float (a float32 is stored exactly)
//	KindText                   Text
//	KindPrincipal, KindService Bytes: the principal's raw bytes
//	KindFunc                   Bytes: the principal; Text: the method name
//	KindOpt                    Opt: nil for null, else the content
//	KindVec                    Elems; a vec nat8 (blob) may instead hold its
//	                           bytes in Bytes (the decoder does so)
//	KindRecord                 Fields, sorted by ID
//	KindVariant                Fields: exactly one, the chosen case
//
// Compare values with Equal (or the Equal method): it is the host equality
// the conformance suite asks for — structural, with blob and vec-of-nat8
// forms equal, Big compared by value, floats by their bits (so NaN equals
// the same NaN) and field names ignored (only IDs count).
type Value struct {
	Kind   Kind
	Bool   bool
	Big    *big.Int
	Uint   uint64
	Int    int64
	Float  float64
	Text   string
	Bytes  []byte
	Opt    *Value
	Elems  []Value
	Fields []FieldValue
}

// FieldValue is one field of a record value or the case of a variant value.
// Name is informative (may be empty); ID identifies the field.
type FieldValue struct {
	ID    uint32
	Name  string
	Value Value
}

// Helpers that build values. They are plain struct literals; use whichever
// reads better.

// NullValue is `null`.
func NullValue() Value { return Value{Kind: KindNull} }

// ReservedValue is the (only) value of reserved.
func ReservedValue() Value { return Value{Kind: KindReserved} }

// BoolValue is a bool.
func BoolValue(b bool) Value { return Value{Kind: KindBool, Bool: b} }

// NatValue is a nat; it copies n.
func NatValue(n *big.Int) Value { return Value{Kind: KindNat, Big: new(big.Int).Set(n)} }

// IntValue is an int; it copies n.
func IntValue(n *big.Int) Value { return Value{Kind: KindInt, Big: new(big.Int).Set(n)} }

// TextValue is a text.
func TextValue(s string) Value { return Value{Kind: KindText, Text: s} }

// BlobValue is a vec nat8 held as bytes.
func BlobValue(b []byte) Value { return Value{Kind: KindVec, Bytes: b} }

// PrincipalValue is a principal given by its raw bytes.
func PrincipalValue(raw []byte) Value { return Value{Kind: KindPrincipal, Bytes: raw} }

// Some is `opt v`.
func Some(v Value) Value { return Value{Kind: KindOpt, Opt: &v} }

// None is the null of an opt type.
func None() Value { return Value{Kind: KindOpt} }

// VecValue is a vec of the elements.
func VecValue(elems ...Value) Value { return Value{Kind: KindVec, Elems: elems} }

// RecordValue is a record of the fields, which it sorts by ID.
func RecordValue(fields ...FieldValue) Value {
	fs := append([]FieldValue(nil), fields...)
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].ID < fs[j].ID })
	return Value{Kind: KindRecord, Fields: fs}
}

// VariantValue is a variant value whose case is f.
func VariantValue(f FieldValue) Value { return Value{Kind: KindVariant, Fields: []FieldValue{f}} }

// Equal reports whether a and b are the same Candid value (see Value).
func Equal(a, b Value) bool { return a.Equal(b) }

// Equal reports whether v and w are the same Candid value (see Value).
func (v Value) Equal(w Value) bool {
	if v.Kind != w.Kind {
		return false
	}
	switch v.Kind {
	case KindNull, KindReserved, KindEmpty:
		return true
	case KindBool:
		return v.Bool == w.Bool
	case KindNat, KindInt:
		return bigOrZero(v.Big).Cmp(bigOrZero(w.Big)) == 0
	case KindNat8, KindNat16, KindNat32, KindNat64:
		return v.Uint == w.Uint
	case KindInt8, KindInt16, KindInt32, KindInt64:
		return v.Int == w.Int
	case KindFloat32, KindFloat64:
		return math.Float64bits(v.Float) == math.Float64bits(w.Float)
	case KindText:
		return v.Text == w.Text
	case KindPrincipal, KindService:
		return bytes.Equal(v.Bytes, w.Bytes)
	case KindFunc:
		return bytes.Equal(v.Bytes, w.Bytes) && v.Text == w.Text
	case KindOpt:
		if v.Opt == nil || w.Opt == nil {
			return v.Opt == nil && w.Opt == nil
		}
		return v.Opt.Equal(*w.Opt)
	case KindVec:
		if v.isBlob() || w.isBlob() {
			vb, ok1 := v.blobBytes()
			wb, ok2 := w.blobBytes()
			return ok1 && ok2 && bytes.Equal(vb, wb)
		}
		if len(v.Elems) != len(w.Elems) {
			return false
		}
		for i := range v.Elems {
			if !v.Elems[i].Equal(w.Elems[i]) {
				return false
			}
		}
		return true
	case KindRecord, KindVariant:
		if len(v.Fields) != len(w.Fields) {
			return false
		}
		for i := range v.Fields {
			if v.Fields[i].ID != w.Fields[i].ID || !v.Fields[i].Value.Equal(w.Fields[i].Value) {
				return false
			}
		}
		return true
	}
	return false
}

func bigOrZero(b *big.Int) *big.Int {
	if b == nil {
		return new(big.Int)
	}
	return b
}

// isBlob reports whether a vec value holds its content in Bytes.
func (v Value) isBlob() bool { return v.Kind == KindVec && v.Bytes != nil }

// blobBytes returns a vec's content as bytes when it is a blob or a vec of
// nat8 values.
func (v Value) blobBytes() ([]byte, bool) {
	if v.Bytes != nil {
		return v.Bytes, true
	}
	b := make([]byte, len(v.Elems))
	for i, e := range v.Elems {
		if e.Kind != KindNat8 {
			return nil, false
		}
		b[i] = byte(e.Uint)
	}
	return b, true
}

// String renders the value in Candid text syntax, for messages and test
// output. Principals are shown as hex bytes (this package does not depend on
// the principal text encoding).
func (v Value) String() string {
	var b strings.Builder
	v.write(&b)
	return b.String()
}

func (v Value) write(b *strings.Builder) {
	switch v.Kind {
	case KindNull, KindReserved:
		b.WriteString("null")
	case KindBool:
		fmt.Fprint(b, v.Bool)
	case KindNat, KindInt:
		b.WriteString(bigOrZero(v.Big).String())
	case KindNat8, KindNat16, KindNat32, KindNat64:
		fmt.Fprint(b, v.Uint)
	case KindInt8, KindInt16, KindInt32, KindInt64:
		fmt.Fprint(b, v.Int)
	case KindFloat32, KindFloat64:
		fmt.Fprint(b, v.Float)
	case KindText:
		fmt.Fprintf(b, "%q", v.Text)
	case KindPrincipal:
		fmt.Fprintf(b, "principal blob %x", v.Bytes)
	case KindService:
		fmt.Fprintf(b, "service blob %x", v.Bytes)
	case KindFunc:
		fmt.Fprintf(b, "func blob %x.%q", v.Bytes, v.Text)
	case KindOpt:
		if v.Opt == nil {
			b.WriteString("null")
			return
		}
		b.WriteString("opt ")
		v.Opt.write(b)
	case KindVec:
		if v.Bytes != nil {
			fmt.Fprintf(b, "blob %q", v.Bytes)
			return
		}
		b.WriteString("vec {")
		for i, e := range v.Elems {
			if i > 0 {
				b.WriteString(";")
			}
			b.WriteString(" ")
			e.write(b)
		}
		b.WriteString(" }")
	case KindRecord, KindVariant:
		b.WriteString(v.Kind.String() + " {")
		for i, f := range v.Fields {
			if i > 0 {
				b.WriteString(";")
			}
			b.WriteString(" ")
			if f.Name != "" {
				b.WriteString(quoteName(f.Name))
			} else {
				fmt.Fprint(b, f.ID)
			}
			b.WriteString(" = ")
			f.Value.write(b)
		}
		b.WriteString(" }")
	default:
		b.WriteString("<" + v.Kind.String() + ">")
	}
}
