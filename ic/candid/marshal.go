package candid

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"reflect"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	"alpnib.dev/ic/internal/leb128"
	"alpnib.dev/ic/principal"
)

// Marshal encodes Go values as one Candid message, one argument per value.
// The Candid types come from the Go types (see the Go types in this
// package and OneOf for the mapping); the type table is built once per list
// of Go types and cached.
func Marshal(args ...any) ([]byte, error) {
	p, err := encPlanFor(args)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, p.sizeHint.Load())
	b = append(b, p.header...)
	for i, a := range args {
		g := p.types[i]
		if b, err = g.encode(b, ifaceData(a, g.rt), 0); err != nil {
			return nil, fmt.Errorf("candid: argument %d (%s): %w", i, g.rt, err)
		}
	}
	if n := int64(len(b)); n > p.sizeHint.Load() {
		p.sizeHint.Store(n)
	}
	return b, nil
}

type encPlan struct {
	types    []*goType
	header   []byte
	sizeHint atomic.Int64
}

type encKey struct {
	n     int
	types [4]reflect.Type
}

var (
	encPlansMu sync.RWMutex
	encPlans   = map[encKey]*encPlan{}
)

func encPlanFor(args []any) (*encPlan, error) {
	var key encKey
	cacheable := len(args) <= len(key.types)
	if cacheable {
		key.n = len(args)
		for i, a := range args {
			if a == nil {
				return nil, fmt.Errorf("candid: argument %d is a nil interface", i)
			}
			key.types[i] = reflect.TypeOf(a)
		}
		encPlansMu.RLock()
		p := encPlans[key]
		encPlansMu.RUnlock()
		if p != nil {
			return p, nil
		}
	}
	p := &encPlan{types: make([]*goType, len(args))}
	cts := make([]*Type, len(args))
	for i, a := range args {
		if a == nil {
			return nil, fmt.Errorf("candid: argument %d is a nil interface", i)
		}
		g, err := typeOf(reflect.TypeOf(a))
		if err != nil {
			return nil, err
		}
		p.types[i], cts[i] = g, g.ctype
	}
	h, err := encodeHeader(cts)
	if err != nil {
		return nil, err
	}
	p.header = h
	p.sizeHint.Store(int64(len(h)) + 64)
	if cacheable {
		encPlansMu.Lock()
		encPlans[key] = p
		encPlansMu.Unlock()
	}
	return p, nil
}

type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// ifaceData returns a pointer to the value held in a non-nil interface.
// Pointer-shaped values are stored in the interface word itself.
func ifaceData(a any, rt reflect.Type) unsafe.Pointer {
	e := (*eface)(unsafe.Pointer(&a))
	if directIface(rt) {
		p := new(unsafe.Pointer)
		*p = e.data
		return unsafe.Pointer(p)
	}
	return e.data
}

// directIface mirrors the compiler's rule for values kept in the interface
// word: pointer-shaped types, and one-element arrays and one-field structs
// of them.
func directIface(rt reflect.Type) bool {
	switch rt.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return true
	case reflect.Struct:
		return rt.NumField() == 1 && directIface(rt.Field(0).Type)
	case reflect.Array:
		return rt.Len() == 1 && directIface(rt.Elem())
	}
	return false
}

type sliceHeader struct {
	data unsafe.Pointer
	len  int
	cap  int
}

// encode appends the value at p, whose Go type is g.
func (g *goType) encode(b []byte, p unsafe.Pointer, depth int) ([]byte, error) {
	switch g.kind {
	case gBool:
		if *(*bool)(p) {
			return append(b, 1), nil
		}
		return append(b, 0), nil
	case gUint8, gInt8:
		return append(b, *(*uint8)(p)), nil
	case gUint16, gInt16:
		return binary.LittleEndian.AppendUint16(b, *(*uint16)(p)), nil
	case gUint32, gInt32, gFloat32:
		return binary.LittleEndian.AppendUint32(b, *(*uint32)(p)), nil
	case gUint64, gInt64, gFloat64:
		if g.size == 4 { // uint or int on a 32-bit platform
			return binary.LittleEndian.AppendUint64(b, uint64(*(*uint32)(p))), nil
		}
		return binary.LittleEndian.AppendUint64(b, *(*uint64)(p)), nil
	case gString:
		s := *(*string)(p)
		if !utf8.ValidString(s) {
			return nil, fmt.Errorf("text is not valid UTF-8")
		}
		b = leb128.AppendUnsigned(b, uint64(len(s)))
		return append(b, s...), nil
	case gBytes:
		s := *(*[]byte)(p)
		b = leb128.AppendUnsigned(b, uint64(len(s)))
		return append(b, s...), nil
	case gPrincipal:
		return appendPrincipalString(b, principalRaw(p)), nil
	case gNatural:
		n := &(*Natural)(p).b
		if n.Sign() < 0 {
			return nil, fmt.Errorf("negative nat %s", n)
		}
		return leb128.AppendUnsignedBig(b, n), nil
	case gInteger:
		return leb128.AppendSignedBig(b, &(*Integer)(p).b), nil
	case gBigInt:
		n := *(**big.Int)(p)
		if n == nil {
			return append(b, 0), nil
		}
		return leb128.AppendSignedBig(b, n), nil
	case gUnit, gIgnore:
		return b, nil
	case gFuncRef:
		f := (*FuncRef)(p)
		b = appendPrincipalString(append(b, 1), principalRaw(unsafe.Pointer(&f.Principal)))
		if !utf8.ValidString(f.Method) {
			return nil, fmt.Errorf("method name is not valid UTF-8")
		}
		b = leb128.AppendUnsigned(b, uint64(len(f.Method)))
		return append(b, f.Method...), nil
	case gServiceRef:
		return appendPrincipalString(b, principalRaw(unsafe.Pointer(&(*ServiceRef)(p).Principal))), nil
	case gSlice:
		if depth > MaxDepth {
			return nil, fmt.Errorf("value nests deeper than %d levels", MaxDepth)
		}
		s := (*sliceHeader)(p)
		b = leb128.AppendUnsigned(b, uint64(s.len))
		var err error
		el, size := g.elem, g.elem.size
		for i := 0; i < s.len; i++ {
			if b, err = el.encode(b, unsafe.Add(s.data, uintptr(i)*size), depth+1); err != nil {
				return nil, err
			}
		}
		return b, nil
	case gPtr:
		q := *(*unsafe.Pointer)(p)
		if q == nil {
			return append(b, 0), nil
		}
		if depth > MaxDepth {
			return nil, fmt.Errorf("value nests deeper than %d levels", MaxDepth)
		}
		return g.elem.encode(append(b, 1), q, depth+1)
	case gRecord:
		var err error
		for i := range g.fields {
			f := &g.fields[i]
			if b, err = f.typ.encode(b, unsafe.Add(p, f.offset), depth); err != nil {
				return nil, err
			}
		}
		return b, nil
	case gVariant:
		chosen := -1
		for i := range g.fields {
			if *(*unsafe.Pointer)(unsafe.Add(p, g.fields[i].offset)) != nil {
				if chosen >= 0 {
					return nil, fmt.Errorf("variant %s has both %s and %s set", g.rt, g.fields[chosen].name, g.fields[i].name)
				}
				chosen = i
			}
		}
		if chosen < 0 {
			return nil, fmt.Errorf("variant %s has no case set", g.rt)
		}
		if depth > MaxDepth {
			return nil, fmt.Errorf("value nests deeper than %d levels", MaxDepth)
		}
		f := &g.fields[chosen]
		b = leb128.AppendUnsigned(b, uint64(chosen))
		if f.typ.unitCase() {
			return b, nil
		}
		return f.typ.encode(b, *(*unsafe.Pointer)(unsafe.Add(p, f.offset)), depth+1)
	}
	return nil, fmt.Errorf("cannot encode Go type %s", g.rt)
}

// principalRaw returns the raw bytes of the principal.Principal at p.
func principalRaw(p unsafe.Pointer) string {
	if principalIsString {
		return *(*string)(p)
	}
	return string((*principal.Principal)(p).Bytes())
}

func appendPrincipalString(b []byte, raw string) []byte {
	b = append(b, 1)
	b = leb128.AppendUnsigned(b, uint64(len(raw)))
	return append(b, raw...)
}
