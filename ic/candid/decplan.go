package candid

import (
	"encoding/binary"
	"reflect"
	"unsafe"

	"alpnib.dev/ic/principal"
)

// The decoding plan compiler: it pairs a message's wire types with the
// Go types being decoded into and yields closures over field offsets, so
// that decoding itself reflects on nothing.

type decKey struct {
	w *Type
	g *goType
}

type decCell struct{ fn decFn }

// decCompiler pairs wire types with Go types into decoding functions. The
// memo makes recursive types compile to finite, cyclic plans.
type decCompiler struct {
	memo map[decKey]*decCell
}

func (c *decCompiler) compile(w *Type, g *goType) decFn {
	w = w.Resolved()
	key := decKey{w, g}
	if cell, ok := c.memo[key]; ok {
		if cell.fn != nil {
			return cell.fn
		}
		return func(d *tdec, p unsafe.Pointer) error { return cell.fn(d, p) }
	}
	cell := &decCell{}
	c.memo[key] = cell
	cell.fn = c.build(w, g)
	return cell.fn
}

func mismatchFn(w *Type, g *goType) decFn {
	return func(d *tdec, p unsafe.Pointer) error {
		return errAt(d.r.pos, ErrSubtype, "wire type %s does not fit Go type %s (%s)", w, g.rt, g.ctype)
	}
}

var zeroSized [0]byte

func (c *decCompiler) build(w *Type, g *goType) decFn {
	switch g.kind {
	case gIgnore:
		return func(d *tdec, p unsafe.Pointer) error { return d.vd.skip(w) }
	case gPtr:
		return c.opt(w, g)
	}
	if w.Kind == KindEmpty {
		return func(d *tdec, p unsafe.Pointer) error {
			return errAt(d.r.pos, ErrFormat, "there is no value of type empty")
		}
	}
	mismatch := mismatchFn(w, g)
	switch g.kind {
	case gUnit:
		if w.Kind != KindNull {
			return mismatch
		}
		return func(d *tdec, p unsafe.Pointer) error { return nil }
	case gBool:
		if w.Kind != KindBool {
			return mismatch
		}
		return func(d *tdec, p unsafe.Pointer) error {
			b, err := d.r.boolean()
			*(*bool)(p) = b
			return err
		}
	case gUint8, gUint16, gUint32, gUint64:
		return c.unsigned(w, g, mismatch)
	case gInt8, gInt16, gInt32, gInt64:
		return c.signed(w, g, mismatch)
	case gFloat32:
		if w.Kind != KindFloat32 {
			return mismatch
		}
		return fixedFn(4, func(b []byte, p unsafe.Pointer) { *(*uint32)(p) = binary.LittleEndian.Uint32(b) })
	case gFloat64:
		if w.Kind != KindFloat64 {
			return mismatch
		}
		return fixedFn(8, func(b []byte, p unsafe.Pointer) { *(*uint64)(p) = binary.LittleEndian.Uint64(b) })
	case gString:
		if w.Kind != KindText {
			return mismatch
		}
		return func(d *tdec, p unsafe.Pointer) error {
			b, err := d.r.text("text")
			if err != nil {
				return err
			}
			*(*string)(p) = d.str(b)
			return nil
		}
	case gBytes:
		if w.Kind != KindVec || w.Elem.Resolved().Kind != KindNat8 {
			return mismatch
		}
		return func(d *tdec, p unsafe.Pointer) error {
			n, err := d.r.length("blob length", 1)
			if err != nil {
				return err
			}
			b := make([]byte, n)
			copy(b, d.r.data[d.r.pos:])
			d.r.pos += n
			*(*[]byte)(p) = b
			return d.r.spend(1)
		}
	case gPrincipal:
		if w.Kind != KindPrincipal && w.Kind != KindService {
			return mismatch
		}
		return func(d *tdec, p unsafe.Pointer) error {
			b, err := d.r.principalRef()
			if err != nil {
				return err
			}
			return setPrincipal(p, d.str(b))
		}
	case gServiceRef:
		if w.Kind != KindService {
			return mismatch
		}
		return func(d *tdec, p unsafe.Pointer) error {
			b, err := d.r.principalRef()
			if err != nil {
				return err
			}
			return setPrincipal(unsafe.Pointer(&(*ServiceRef)(p).Principal), d.str(b))
		}
	case gFuncRef:
		if w.Kind != KindFunc {
			return mismatch
		}
		return func(d *tdec, p unsafe.Pointer) error {
			pb, m, err := d.r.funcRef()
			if err != nil {
				return err
			}
			f := (*FuncRef)(p)
			f.Method = d.str(m)
			return setPrincipal(unsafe.Pointer(&f.Principal), d.str(pb))
		}
	case gNatural, gInteger, gBigInt:
		return c.bigNumber(w, g, mismatch)
	case gSlice:
		if w.Kind != KindVec {
			return mismatch
		}
		return c.slice(w, g)
	case gRecord:
		if w.Kind != KindRecord {
			return mismatch
		}
		return c.record(w, g)
	case gVariant:
		if w.Kind != KindVariant {
			return mismatch
		}
		return c.variant(w, g)
	}
	return mismatch
}

func setPrincipal(p unsafe.Pointer, raw string) error {
	if principalIsString {
		*(*string)(p) = raw
		return nil
	}
	pr, err := principal.FromBytes([]byte(raw))
	if err != nil {
		return err
	}
	*(*principal.Principal)(p) = pr
	return nil
}

// opt implements the opt rules (see valueDecoder.opt) into a Go pointer.
func (c *decCompiler) opt(w *Type, g *goType) decFn {
	switch w.Kind {
	case KindNull, KindReserved:
		return func(d *tdec, p unsafe.Pointer) error {
			*(*unsafe.Pointer)(p) = nil
			return nil
		}
	case KindFuture:
		return func(d *tdec, p unsafe.Pointer) error {
			*(*unsafe.Pointer)(p) = nil
			return d.vd.skip(w)
		}
	case KindOpt:
		inner := c.try(w.Elem.Resolved(), g.elem)
		return func(d *tdec, p unsafe.Pointer) error {
			tag, err := d.r.byte("opt tag")
			if err != nil {
				return err
			}
			switch tag {
			case 0:
				*(*unsafe.Pointer)(p) = nil
				return nil
			case 1:
				return inner(d, p)
			}
			return errAt(d.r.pos-1, ErrFormat, "opt tag is %#x, not 0 or 1", tag)
		}
	}
	return c.try(w, g.elem)
}

// try decodes w into a new Go value of type el and stores its pointer at p;
// a type mismatch rewinds, skips the value and stores nil.
func (c *decCompiler) try(w *Type, el *goType) decFn {
	inner := c.compile(w, el)
	rt := el.rt
	return func(d *tdec, p unsafe.Pointer) error {
		if err := d.r.enter(); err != nil {
			return err
		}
		if err := d.r.spend(1); err != nil {
			return err
		}
		start, depth := d.r.pos, d.r.depth
		q := reflect.New(rt).UnsafePointer()
		err := inner(d, q)
		if err == nil {
			*(*unsafe.Pointer)(p) = q
			d.r.depth--
			return nil
		}
		if !isSubtypeErr(err) {
			return err
		}
		d.r.pos, d.r.depth = start, depth
		*(*unsafe.Pointer)(p) = nil
		err = d.vd.skip(w)
		d.r.depth--
		return err
	}
}

func (c *decCompiler) slice(w *Type, g *goType) decFn {
	el := c.compile(w.Elem, g.elem)
	we := w.Elem.Resolved()
	minSize := minWireSize(we, map[*Type]int{})
	rt, size := g.rt, g.elem.size
	// Elements that take no wire bytes are paid for from the budget in
	// proportion to the Go memory they take.
	perElem := 1 + int(size/8)
	principals := g.elem.kind == gPrincipal && we.Kind == KindPrincipal && principalIsString
	return func(d *tdec, p unsafe.Pointer) error {
		r := &d.r
		n, err := r.vecLen(minSize, perElem)
		if err != nil {
			return err
		}
		cost := n + 1
		if minSize == 0 {
			cost = n*perElem + 1
		}
		if err := r.spend(cost); err != nil {
			return err
		}
		if err := r.enter(); err != nil {
			return err
		}
		s := (*sliceHeader)(p)
		if n == 0 {
			s.data, s.len, s.cap = unsafe.Pointer(&zeroSized), 0, 0
			r.depth--
			return nil
		}
		// Allocate the whole slice at once unless that would be far more
		// memory than the bytes left can justify (small wire elements into
		// big Go ones); then grow it as elements actually decode.
		if total := uintptr(n) * size; total > 1<<16 && total > 16*uintptr(r.remaining()+1) {
			sv := reflect.MakeSlice(rt, 0, 64)
			for i := 0; i < n; i++ {
				if sv.Len() == sv.Cap() {
					sv.Grow(sv.Len())
				}
				sv.SetLen(i + 1)
				if err := el(d, unsafe.Add(sv.UnsafePointer(), uintptr(i)*size)); err != nil {
					return err
				}
			}
			s.data, s.len, s.cap = sv.UnsafePointer(), sv.Len(), sv.Cap()
			r.depth--
			return nil
		}
		data := reflect.MakeSlice(rt, n, n).UnsafePointer()
		start := uintptr(0)
		if principals {
			start = uintptr(d.principals(data, n))
		}
		for i := start; i < uintptr(n); i++ {
			if err := el(d, unsafe.Add(data, i*size)); err != nil {
				return err
			}
		}
		s.data, s.len, s.cap = data, n, n
		r.depth--
		return nil
	}
}

// principals decodes the elements of a vec of principals that have the
// common shape (flag 1, a one-byte length, the bytes) in a tight loop and
// returns how many it did; the general path takes over at the first
// element of another shape (and reports any error).
func (d *tdec) principals(data unsafe.Pointer, n int) int {
	r := &d.r
	if d.arena == "" {
		d.arena = string(r.data)
	}
	buf, pos := r.data, r.pos
	i := 0
	for ; i < n; i++ {
		if pos+2 > len(buf) || buf[pos] != 1 {
			break
		}
		l := int(buf[pos+1])
		if l > maxPrincipalLen || pos+2+l > len(buf) {
			break
		}
		*(*string)(unsafe.Add(data, uintptr(i)*unsafe.Sizeof(""))) = d.arena[pos+2 : pos+2+l]
		pos += 2 + l
	}
	r.pos = pos
	return i
}

type recordStep struct {
	skip   *Type // wire field to skip, or nil
	offset uintptr
	fn     decFn
}

func (c *decCompiler) record(w *Type, g *goType) decFn {
	var steps []recordStep
	var zeros []decFn // Go fields absent from the wire
	j := 0
	missing := func(f goField) decFn {
		if !isOptional(f.typ.ctype) {
			return mismatchFieldFn(f, g)
		}
		z := zeroFn(f.typ)
		off := f.offset
		return func(d *tdec, p unsafe.Pointer) error { return z(d, unsafe.Add(p, off)) }
	}
	for _, wf := range w.Fields {
		for ; j < len(g.fields) && g.fields[j].id < wf.ID; j++ {
			zeros = append(zeros, missing(g.fields[j]))
		}
		if j < len(g.fields) && g.fields[j].id == wf.ID {
			f := g.fields[j]
			steps = append(steps, recordStep{offset: f.offset, fn: c.compile(wf.Type, f.typ)})
			j++
			continue
		}
		steps = append(steps, recordStep{skip: wf.Type})
	}
	for ; j < len(g.fields); j++ {
		zeros = append(zeros, missing(g.fields[j]))
	}
	return func(d *tdec, p unsafe.Pointer) error {
		for i := range steps {
			s := &steps[i]
			var err error
			if s.skip != nil {
				err = d.vd.skip(s.skip)
			} else {
				err = s.fn(d, unsafe.Add(p, s.offset))
			}
			if err != nil {
				return err
			}
		}
		for _, z := range zeros {
			if err := z(d, p); err != nil {
				return err
			}
		}
		return nil
	}
}

func mismatchFieldFn(f goField, g *goType) decFn {
	return func(d *tdec, p unsafe.Pointer) error {
		return errAt(d.r.pos, ErrSubtype, "record field %d (%s) of Go type %s is missing", f.id, f.name, g.rt)
	}
}

type variantCase struct {
	field  int // index in g.fields, -1 when the Go type lacks the case
	offset uintptr
	rt     reflect.Type
	unit   bool
	fn     decFn
	wire   *Type
}

func (c *decCompiler) variant(w *Type, g *goType) decFn {
	cases := make([]variantCase, len(w.Fields))
	for i, wf := range w.Fields {
		cases[i] = variantCase{field: -1, wire: wf.Type}
		for k, f := range g.fields {
			if f.id != wf.ID {
				continue
			}
			vc := variantCase{field: k, offset: f.offset, rt: f.typ.rt, wire: wf.Type}
			if f.typ.unitCase() {
				vc.unit = true
				if wt := wf.Type.Resolved(); wt.Kind != KindNull {
					vc.fn = mismatchFn(wt, f.typ)
				}
			} else {
				vc.fn = c.compile(wf.Type, f.typ)
			}
			cases[i] = vc
		}
	}
	offsets := make([]uintptr, len(g.fields))
	for i, f := range g.fields {
		offsets[i] = f.offset
	}
	return func(d *tdec, p unsafe.Pointer) error {
		r := &d.r
		at := r.pos
		idx, err := r.leb("variant index")
		if err != nil {
			return err
		}
		if idx >= uint64(len(cases)) {
			return errAt(at, ErrFormat, "variant index %d out of range of %d cases", idx, len(cases))
		}
		vc := &cases[idx]
		if vc.field < 0 {
			return errAt(at, ErrSubtype, "variant case %d is not in Go type %s", w.Fields[idx].ID, g.rt)
		}
		for _, off := range offsets {
			*(*unsafe.Pointer)(unsafe.Add(p, off)) = nil
		}
		if err := r.enter(); err != nil {
			return err
		}
		defer func() { r.depth-- }()
		if vc.unit {
			if vc.fn != nil {
				return vc.fn(d, nil)
			}
			*(*unsafe.Pointer)(unsafe.Add(p, vc.offset)) = unsafe.Pointer(&zeroSized)
			return nil
		}
		q := reflect.New(vc.rt).UnsafePointer()
		if err := vc.fn(d, q); err != nil {
			return err
		}
		*(*unsafe.Pointer)(unsafe.Add(p, vc.offset)) = q
		return nil
	}
}
