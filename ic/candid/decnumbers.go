package candid

import (
	"encoding/binary"
	"math"
	"math/big"
	"unsafe"
)

// Decoding plans for numbers: fixed-width wire numbers into Go integers
// and floats, and nat/int into Go integers (range-checked) and big types.

func fixedFn(size int, set func(b []byte, p unsafe.Pointer)) decFn {
	return func(d *tdec, p unsafe.Pointer) error {
		r := &d.r
		if r.remaining() < size {
			return r.truncated("fixed-size number")
		}
		set(r.data[r.pos:r.pos+size], p)
		r.pos += size
		return nil
	}
}

// unsigned reads natN of the Go size, or a nat that fits it.
func (c *decCompiler) unsigned(w *Type, g *goType, mismatch decFn) decFn {
	size := int(g.size)
	store := func(p unsafe.Pointer, v uint64) {
		switch size {
		case 1:
			*(*uint8)(p) = uint8(v)
		case 2:
			*(*uint16)(p) = uint16(v)
		case 4:
			*(*uint32)(p) = uint32(v)
		default:
			*(*uint64)(p) = v
		}
	}
	want := map[goKind]Kind{gUint8: KindNat8, gUint16: KindNat16, gUint32: KindNat32, gUint64: KindNat64}[g.kind]
	switch {
	case w.Kind == want && size == 8:
		return fixedFn(8, func(b []byte, p unsafe.Pointer) { *(*uint64)(p) = binary.LittleEndian.Uint64(b) })
	case w.Kind == want && size == 4 && want == KindNat32:
		return fixedFn(4, func(b []byte, p unsafe.Pointer) { *(*uint32)(p) = binary.LittleEndian.Uint32(b) })
	case w.Kind == want:
		ws := fixedSize(want)
		return fixedFn(ws, func(b []byte, p unsafe.Pointer) { store(p, leUint(b)) })
	case w.Kind == KindNat:
		max := uint64(math.MaxUint64)
		if size < 8 {
			max = 1<<(8*size) - 1
		}
		return func(d *tdec, p unsafe.Pointer) error {
			at := d.r.pos
			v, err := d.r.leb("nat")
			if err != nil {
				return err
			}
			if v > max {
				return errAt(at, ErrSubtype, "nat %d does not fit Go type %s", v, g.rt)
			}
			store(p, v)
			return nil
		}
	}
	return mismatch
}

func leUint(b []byte) uint64 {
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// signed reads intN of the Go size, or an int or nat that fits it.
func (c *decCompiler) signed(w *Type, g *goType, mismatch decFn) decFn {
	size := int(g.size)
	store := func(p unsafe.Pointer, v int64) {
		switch size {
		case 1:
			*(*int8)(p) = int8(v)
		case 2:
			*(*int16)(p) = int16(v)
		case 4:
			*(*int32)(p) = int32(v)
		default:
			*(*int64)(p) = v
		}
	}
	want := map[goKind]Kind{gInt8: KindInt8, gInt16: KindInt16, gInt32: KindInt32, gInt64: KindInt64}[g.kind]
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if size < 8 {
		lo, hi = -1<<(8*size-1), 1<<(8*size-1)-1
	}
	switch {
	case w.Kind == want && size == 4 && want == KindInt32:
		return fixedFn(4, func(b []byte, p unsafe.Pointer) { *(*uint32)(p) = binary.LittleEndian.Uint32(b) })
	case w.Kind == want && size == 8:
		return fixedFn(8, func(b []byte, p unsafe.Pointer) { *(*uint64)(p) = binary.LittleEndian.Uint64(b) })
	case w.Kind == want:
		ws := fixedSize(want)
		return fixedFn(ws, func(b []byte, p unsafe.Pointer) {
			u := leUint(b)
			shift := 64 - 8*uint(ws)
			store(p, int64(u<<shift)>>shift)
		})
	case w.Kind == KindInt || w.Kind == KindNat:
		nat := w.Kind == KindNat
		return func(d *tdec, p unsafe.Pointer) error {
			at := d.r.pos
			var v int64
			if nat {
				u, err := d.r.leb("nat")
				if err != nil {
					return err
				}
				if u > math.MaxInt64 {
					return errAt(at, ErrSubtype, "nat %d does not fit Go type %s", u, g.rt)
				}
				v = int64(u)
			} else {
				var err error
				if v, err = d.r.sleb("int"); err != nil {
					return err
				}
			}
			if v < lo || v > hi {
				return errAt(at, ErrSubtype, "int %d does not fit Go type %s", v, g.rt)
			}
			store(p, v)
			return nil
		}
	}
	return mismatch
}

func (c *decCompiler) bigNumber(w *Type, g *goType, mismatch decFn) decFn {
	if w.Kind != KindNat && (w.Kind != KindInt || g.kind == gNatural) {
		return mismatch
	}
	nat := w.Kind == KindNat
	kind := g.kind
	return func(d *tdec, p unsafe.Pointer) error {
		var n *big.Int
		var err error
		if nat {
			n, err = d.r.nat()
		} else {
			n, err = d.r.int()
		}
		if err != nil {
			return err
		}
		switch kind {
		case gNatural:
			(*Natural)(p).b = *n
		case gInteger:
			(*Integer)(p).b = *n
		default:
			*(**big.Int)(p) = n
		}
		return nil
	}
}
