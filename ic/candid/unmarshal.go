package candid

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"unsafe"
)

// Unmarshal decodes a Candid message into the Go values args point to, one
// argument per pointer, with Candid subtyping (see the package
// documentation): extra wire arguments and record fields are skipped,
// missing opt fields and trailing opt arguments become nil, and an opt whose
// content does not fit becomes nil.
//
// Decoding is planned once per (message type table, Go types) pair and the
// plan is cached, so repeated replies of one method cost no reflection.
// Strings (text, principals) decoded from one message share one copy of its
// bytes: keeping any of them keeps that copy alive.
func Unmarshal(data []byte, args ...any) error {
	var rts [4]reflect.Type
	types := rts[:0]
	if len(args) > len(rts) {
		types = make([]reflect.Type, 0, len(args))
	}
	for i, a := range args {
		rt := reflect.TypeOf(a)
		if rt == nil || rt.Kind() != reflect.Pointer || (*eface)(unsafe.Pointer(&a)).data == nil {
			return fmt.Errorf("candid: Unmarshal argument %d must be a non-nil pointer, not %T", i, a)
		}
		types = append(types, rt.Elem())
	}
	plan, err := decPlanFor(data, types)
	if err != nil {
		return err
	}
	d := &tdec{}
	d.r = reader{data: data, pos: plan.h.end, budget: BaseCost + CostPerByte*len(data)}
	d.vd.r = &d.r
	for i, a := range args {
		p := (*eface)(unsafe.Pointer(&a)).data
		if err := plan.fns[i](d, p); err != nil {
			return err
		}
	}
	for i := len(args); i < len(plan.h.args); i++ {
		if err := d.vd.skip(plan.h.args[i]); err != nil {
			return err
		}
	}
	if d.r.pos != len(data) {
		return errAt(d.r.pos, ErrFormat, "%d bytes left over after the last value", len(data)-d.r.pos)
	}
	return nil
}

// tdec is the state of one typed decode.
type tdec struct {
	r     reader
	vd    valueDecoder
	arena string
}

// str returns b (a slice of the message) as a string carved out of one
// copy of the message, so decoding many strings costs one allocation.
func (d *tdec) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if d.arena == "" {
		d.arena = string(d.r.data)
	}
	off := uintptr(unsafe.Pointer(unsafe.SliceData(b))) - uintptr(unsafe.Pointer(unsafe.SliceData(d.r.data)))
	return d.arena[off : off+uintptr(len(b))]
}

type decFn func(d *tdec, p unsafe.Pointer) error

type decPlan struct {
	types []reflect.Type
	h     *header
	fns   []decFn
}

type hdrEntry struct {
	h     *header
	plans []*decPlan
}

// The plan cache is keyed by the header bytes. It is bounded so that a
// stream of distinct hostile headers cannot grow it.
const (
	maxCachedHeaders   = 256
	maxCachedHeaderLen = 16 << 10
)

var (
	decCacheMu sync.RWMutex
	decCache   = map[string]*hdrEntry{}
)

func decPlanFor(data []byte, types []reflect.Type) (*decPlan, error) {
	end, ok := headerEnd(data)
	if ok {
		decCacheMu.RLock()
		if e := decCache[string(data[:end])]; e != nil {
			for _, p := range e.plans {
				if slices.Equal(p.types, types) {
					decCacheMu.RUnlock()
					return p, nil
				}
			}
		}
		decCacheMu.RUnlock()
	}
	h, err := parseHeader(data)
	if err != nil {
		return nil, err
	}
	p := &decPlan{types: append([]reflect.Type(nil), types...), h: h, fns: make([]decFn, len(types))}
	c := decCompiler{memo: map[decKey]*decCell{}}
	for i, rt := range types {
		g, err := typeOf(rt)
		if err != nil {
			return nil, err
		}
		if i < len(h.args) {
			p.fns[i] = c.compile(h.args[i], g)
		} else {
			p.fns[i] = missingArg(i, g)
		}
	}
	if ok && end <= maxCachedHeaderLen {
		decCacheMu.Lock()
		e := decCache[string(data[:end])]
		if e == nil && len(decCache) < maxCachedHeaders {
			e = &hdrEntry{h: h}
			decCache[string(data[:end])] = e
		}
		if e != nil && len(e.plans) < 16 {
			p.h = e.h
			e.plans = append(e.plans, p)
		}
		decCacheMu.Unlock()
	}
	return p, nil
}

// missingArg fills an argument the message does not have: nil or zero for
// opt, null and reserved types, an error otherwise.
func missingArg(i int, g *goType) decFn {
	if !isOptional(g.ctype) {
		return func(d *tdec, p unsafe.Pointer) error {
			return errAt(d.r.pos, ErrSubtype, "argument %d of type %s is missing", i, g.ctype)
		}
	}
	return zeroFn(g)
}

func zeroFn(g *goType) decFn {
	rt := g.rt
	return func(d *tdec, p unsafe.Pointer) error {
		reflect.NewAt(rt, p).Elem().SetZero()
		return nil
	}
}

// headerEnd finds where the values start, without allocating; ok is false
// when the header is malformed (parseHeader then says why).
func headerEnd(data []byte) (int, bool) {
	if len(data) < 4 || string(data[:4]) != "DIDL" {
		return 0, false
	}
	r := reader{data: data, pos: 4}
	n, err := r.length("", 1)
	if err != nil {
		return 0, false
	}
	skipN := func(count uint64, each func() error) error {
		for i := uint64(0); i < count; i++ {
			if err := each(); err != nil {
				return err
			}
		}
		return nil
	}
	sleb := func() error { _, err := r.sleb(""); return err }
	for i := 0; i < n; i++ {
		op, err := r.sleb("")
		if err != nil {
			return 0, false
		}
		switch {
		case op == opOpt || op == opVec:
			err = sleb()
		case op == opRecord || op == opVariant:
			var c uint64
			if c, err = r.leb(""); err == nil {
				err = skipN(c, func() error {
					if _, err := r.leb(""); err != nil {
						return err
					}
					return sleb()
				})
			}
		case op == opFunc:
			for k := 0; k < 2 && err == nil; k++ {
				var c uint64
				if c, err = r.leb(""); err == nil {
					err = skipN(c, sleb)
				}
			}
			if err == nil {
				var c uint64
				if c, err = r.leb(""); err == nil {
					_, err = r.take(c, "")
				}
			}
		case op == opService:
			var c uint64
			if c, err = r.leb(""); err == nil {
				err = skipN(c, func() error {
					l, err := r.leb("")
					if err != nil {
						return err
					}
					if _, err := r.take(l, ""); err != nil {
						return err
					}
					return sleb()
				})
			}
		case op < opPrincipal:
			var c uint64
			if c, err = r.leb(""); err == nil {
				_, err = r.take(c, "")
			}
		default:
			return 0, false
		}
		if err != nil {
			return 0, false
		}
	}
	c, err := r.leb("")
	if err != nil || skipN(c, sleb) != nil {
		return 0, false
	}
	return r.pos, true
}
