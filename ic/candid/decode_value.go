package candid

import (
	"encoding/binary"
	"math"
	"math/big"
	"sync/atomic"
)

// DecodeValues decodes a whole message (magic, type table, argument types,
// values) as the argument types expected, applying Candid subtyping: extra
// arguments are skipped, missing trailing arguments of opt, null or reserved
// type read as null, and so on (see the package documentation). Trailing
// bytes after the last value are an error. Every error is a *DecodeError.
func DecodeValues(data []byte, expected []*Type) ([]Value, error) {
	for _, t := range expected {
		if err := t.Check(); err != nil {
			return nil, err
		}
	}
	h, err := parseHeader(data)
	if err != nil {
		return nil, err
	}
	d := valueDecoder{r: newReader(data, h.end)}
	out := make([]Value, len(expected))
	for i, e := range expected {
		if i >= len(h.args) {
			v, ok := missingValue(e)
			if !ok {
				return nil, errAt(d.r.pos, ErrSubtype, "argument %d of type %s is missing", i, e)
			}
			out[i] = v
			continue
		}
		if out[i], err = d.value(h.args[i], e); err != nil {
			return nil, err
		}
	}
	for i := len(expected); i < len(h.args); i++ {
		if err := d.skip(h.args[i]); err != nil {
			return nil, err
		}
	}
	if d.r.pos != len(data) {
		return nil, errAt(d.r.pos, ErrFormat, "%d bytes left over after the last value", len(data)-d.r.pos)
	}
	return out, nil
}

// Decode decodes a whole message at its own wire types, needing no expected
// types. It returns the argument types as the message declares them (with
// field names unknown: only IDs travel on the wire) and the values.
func Decode(data []byte) ([]*Type, []Value, error) {
	h, err := parseHeader(data)
	if err != nil {
		return nil, nil, err
	}
	vals, err := DecodeValues(data, h.args)
	if err != nil {
		return nil, nil, err
	}
	return h.args, vals, nil
}

type valueDecoder struct {
	r       *reader
	minSize map[*Type]int
	subtype map[[2]*Type]bool
}

// isSubtype is IsSubtype remembered per pair for the message, so a vec of
// a million references to a huge func type checks that type once.
func (d *valueDecoder) isSubtype(w, e *Type) bool {
	key := [2]*Type{w, e}
	if v, ok := d.subtype[key]; ok {
		return v
	}
	if d.subtype == nil {
		d.subtype = map[[2]*Type]bool{}
	}
	subtypeChecks.Add(1)
	v := IsSubtype(w, e)
	d.subtype[key] = v
	return v
}

// subtypeChecks counts reference subtype checks, for a test.
var subtypeChecks atomic.Int64

// value decodes one value of wire type w as expected type e.
func (d *valueDecoder) value(w, e *Type) (Value, error) {
	w, e = w.Resolved(), e.Resolved()
	r := d.r
	if err := r.spend(valueCost); err != nil {
		return Value{}, err
	}
	if err := r.enter(); err != nil {
		return Value{}, err
	}
	defer func() { r.depth-- }()

	switch e.Kind {
	case KindReserved:
		if err := d.skip(w); err != nil {
			return Value{}, err
		}
		return Value{Kind: KindReserved}, nil
	case KindOpt:
		return d.opt(w, e)
	case KindFuture:
		// Only reachable from Decode, which expects the wire types.
		if err := d.skip(w); err != nil {
			return Value{}, err
		}
		return Value{Kind: KindReserved}, nil
	}
	if w.Kind == KindEmpty {
		return Value{}, errAt(r.pos, ErrFormat, "there is no value of type empty")
	}
	mismatch := func() (Value, error) {
		return Value{}, errAt(r.pos, ErrSubtype, "wire type %s does not fit expected type %s", w, e)
	}
	switch e.Kind {
	case KindNull:
		if w.Kind != KindNull {
			return mismatch()
		}
		return Value{Kind: KindNull}, nil
	case KindBool:
		if w.Kind != KindBool {
			return mismatch()
		}
		b, err := r.boolean()
		return Value{Kind: KindBool, Bool: b}, err
	case KindNat:
		if w.Kind != KindNat {
			return mismatch()
		}
		n, err := r.nat()
		return Value{Kind: KindNat, Big: n}, err
	case KindInt:
		var n *big.Int
		var err error
		switch w.Kind {
		case KindNat:
			n, err = r.nat()
		case KindInt:
			n, err = r.int()
		default:
			return mismatch()
		}
		return Value{Kind: KindInt, Big: n}, err
	case KindNat8, KindNat16, KindNat32, KindNat64, KindInt8, KindInt16, KindInt32, KindInt64, KindFloat32, KindFloat64:
		if w.Kind != e.Kind {
			return mismatch()
		}
		return d.fixed(e.Kind)
	case KindText:
		if w.Kind != KindText {
			return mismatch()
		}
		b, err := r.text("text")
		return Value{Kind: KindText, Text: string(b)}, err
	case KindPrincipal:
		if w.Kind != KindPrincipal && w.Kind != KindService {
			return mismatch()
		}
		b, err := r.principalRef()
		return Value{Kind: KindPrincipal, Bytes: append([]byte{}, b...)}, err
	case KindService:
		if w.Kind != KindService || !d.isSubtype(w, e) {
			return mismatch()
		}
		b, err := r.principalRef()
		return Value{Kind: KindService, Bytes: append([]byte{}, b...)}, err
	case KindFunc:
		if w.Kind != KindFunc || !d.isSubtype(w, e) {
			return mismatch()
		}
		p, m, err := r.funcRef()
		return Value{Kind: KindFunc, Bytes: append([]byte{}, p...), Text: string(m)}, err
	case KindVec:
		if w.Kind != KindVec {
			return mismatch()
		}
		return d.vec(w, e)
	case KindRecord:
		if w.Kind != KindRecord {
			return mismatch()
		}
		return d.record(w, e)
	case KindVariant:
		if w.Kind != KindVariant {
			return mismatch()
		}
		return d.variant(w, e)
	}
	return mismatch()
}

func (d *valueDecoder) fixed(k Kind) (Value, error) {
	r := d.r
	v := Value{Kind: k}
	size := fixedSize(k)
	b, err := r.fixed(size, k.String())
	if err != nil {
		return v, err
	}
	var u uint64
	switch size {
	case 1:
		u = uint64(b[0])
	case 2:
		u = uint64(binary.LittleEndian.Uint16(b))
	case 4:
		u = uint64(binary.LittleEndian.Uint32(b))
	case 8:
		u = binary.LittleEndian.Uint64(b)
	}
	switch k {
	case KindNat8, KindNat16, KindNat32, KindNat64:
		v.Uint = u
	case KindInt8:
		v.Int = int64(int8(u))
	case KindInt16:
		v.Int = int64(int16(u))
	case KindInt32:
		v.Int = int64(int32(u))
	case KindInt64:
		v.Int = int64(u)
	case KindFloat32:
		v.Float = float64(math.Float32frombits(uint32(u)))
	case KindFloat64:
		v.Float = math.Float64frombits(u)
	}
	return v, nil
}

// fixedSize is the wire size of a fixed-width primitive, 0 for others.
func fixedSize(k Kind) int {
	switch k {
	case KindNat8, KindInt8:
		return 1
	case KindNat16, KindInt16:
		return 2
	case KindNat32, KindInt32, KindFloat32:
		return 4
	case KindNat64, KindInt64, KindFloat64:
		return 8
	}
	return 0
}

// opt implements the opt rules: null and reserved read as null, an opt
// reads its content, and any other wire type reads as `opt v` when the value
// fits and as null when it does not (the value is still validated).
func (d *valueDecoder) opt(w, e *Type) (Value, error) {
	r := d.r
	switch w.Kind {
	case KindNull, KindReserved:
		return Value{Kind: KindOpt}, nil
	case KindFuture:
		if err := d.skip(w); err != nil {
			return Value{}, err
		}
		return Value{Kind: KindOpt}, nil
	case KindOpt:
		c, err := r.byte("opt tag")
		if err != nil {
			return Value{}, err
		}
		switch c {
		case 0:
			return Value{Kind: KindOpt}, nil
		case 1:
			return d.tryOpt(w.Elem, e.Elem)
		}
		return Value{}, errAt(r.pos-1, ErrFormat, "opt tag is %#x, not 0 or 1", c)
	}
	return d.tryOpt(w, e.Elem)
}

// tryOpt decodes w as e inside an opt; a type mismatch anywhere inside
// rewinds, skips the value at its wire type and yields null.
func (d *valueDecoder) tryOpt(w, e *Type) (Value, error) {
	r := d.r
	start, depth := r.pos, r.depth
	v, err := d.value(w, e)
	if err == nil {
		return Value{Kind: KindOpt, Opt: &v}, nil
	}
	if !isSubtypeErr(err) {
		return Value{}, err
	}
	r.pos, r.depth = start, depth
	if err := d.skip(w); err != nil {
		return Value{}, err
	}
	return Value{Kind: KindOpt}, nil
}

func (d *valueDecoder) vec(w, e *Type) (Value, error) {
	r := d.r
	n, err := d.vecLen(w.Elem, valueCost)
	if err != nil {
		return Value{}, err
	}
	we, ee := w.Elem.Resolved(), e.Elem.Resolved()
	if we.Kind == KindNat8 && ee.Kind == KindNat8 {
		b, err := r.take(uint64(n), "blob")
		if err != nil {
			return Value{}, err
		}
		if err := r.spend(n); err != nil {
			return Value{}, err
		}
		return Value{Kind: KindVec, Bytes: append([]byte{}, b...)}, nil
	}
	elems := make([]Value, 0, min(n, 1024))
	for i := 0; i < n; i++ {
		v, err := d.value(we, ee)
		if err != nil {
			return Value{}, err
		}
		elems = append(elems, v)
	}
	return Value{Kind: KindVec, Elems: elems}, nil
}

// valueCost is what producing one Value costs from the budget: more than
// skipping (1), since a Value takes memory.
const valueCost = 16

// vecLen reads a vec of elem and checks its length (reader.vecLen).
func (d *valueDecoder) vecLen(elem *Type, perElem int) (int, error) {
	return d.r.vecLen(d.size(elem), perElem)
}

func (d *valueDecoder) size(t *Type) int {
	if d.minSize == nil {
		d.minSize = map[*Type]int{}
	}
	return minWireSize(t, d.minSize)
}

// minWireSize is the fewest bytes a value of type t takes; memo also marks
// types being computed (recursion through them counts as 0).
func minWireSize(t *Type, memo map[*Type]int) int {
	t = t.Resolved()
	if s, ok := memo[t]; ok {
		return s
	}
	switch t.Kind {
	case KindNull, KindReserved, KindEmpty:
		return 0
	case KindRecord:
		memo[t] = 0
		s := 0
		for _, f := range t.Fields {
			s += minWireSize(f.Type, memo)
			if s > 1<<20 {
				s = 1 << 20
			}
		}
		memo[t] = s
		return s
	case KindFuture:
		return 2
	}
	if fs := fixedSize(t.Kind); fs > 0 {
		return fs
	}
	return 1
}

func (d *valueDecoder) record(w, e *Type) (Value, error) {
	r := d.r
	fields := make([]FieldValue, 0, len(e.Fields))
	j := 0
	fill := func(upTo uint32, all bool) error {
		for ; j < len(e.Fields) && (all || e.Fields[j].ID < upTo); j++ {
			v, ok := missingValue(e.Fields[j].Type)
			if !ok {
				return errAt(r.pos, ErrSubtype, "record field %d of type %s is missing", e.Fields[j].ID, e.Fields[j].Type)
			}
			fields = append(fields, FieldValue{ID: e.Fields[j].ID, Name: e.Fields[j].Name, Value: v})
		}
		return nil
	}
	for _, wf := range w.Fields {
		if err := fill(wf.ID, false); err != nil {
			return Value{}, err
		}
		if j < len(e.Fields) && e.Fields[j].ID == wf.ID {
			v, err := d.value(wf.Type, e.Fields[j].Type)
			if err != nil {
				return Value{}, err
			}
			fields = append(fields, FieldValue{ID: wf.ID, Name: e.Fields[j].Name, Value: v})
			j++
			continue
		}
		if err := d.skip(wf.Type); err != nil {
			return Value{}, err
		}
	}
	if err := fill(0, true); err != nil {
		return Value{}, err
	}
	return Value{Kind: KindRecord, Fields: fields}, nil
}

func (d *valueDecoder) variant(w, e *Type) (Value, error) {
	r := d.r
	start := r.pos
	idx, err := r.leb("variant index")
	if err != nil {
		return Value{}, err
	}
	if idx >= uint64(len(w.Fields)) {
		return Value{}, errAt(start, ErrFormat, "variant index %d out of range of %d cases", idx, len(w.Fields))
	}
	wf := w.Fields[idx]
	ef, ok := findField(e.Fields, wf.ID)
	if !ok {
		return Value{}, errAt(start, ErrSubtype, "variant case %d is not in the expected type %s", wf.ID, e)
	}
	v, err := d.value(wf.Type, ef.Type)
	if err != nil {
		return Value{}, err
	}
	return Value{Kind: KindVariant, Fields: []FieldValue{{ID: wf.ID, Name: ef.Name, Value: v}}}, nil
}

// skip reads past one value of wire type w, validating it.
func (d *valueDecoder) skip(w *Type) error {
	return skipValue(d.r, w, d)
}
