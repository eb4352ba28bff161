package candid

import (
	"fmt"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"alpnib.dev/ic/principal"
)

// goKind is how a Go type is encoded and decoded.
type goKind uint8

const (
	gBool goKind = iota + 1
	gUint8
	gUint16
	gUint32
	gUint64 // also uint and uintptr
	gInt8
	gInt16
	gInt32
	gInt64 // also int
	gFloat32
	gFloat64
	gString
	gBytes
	gPrincipal
	gNatural
	gInteger
	gBigInt // *big.Int, as int
	gUnit
	gIgnore
	gFuncRef
	gServiceRef
	gSlice
	gPtr
	gRecord
	gVariant
)

// goType is the cached plan for one Go type: its Candid type and what the
// encoder and decoders need (field offsets, element types), computed once
// so that no value is reflected on per call.
type goType struct {
	rt     reflect.Type
	kind   goKind
	ctype  *Type
	size   uintptr
	elem   *goType   // gSlice, gPtr; gVariant cases use fields[i].typ
	fields []goField // gRecord, gVariant: sorted by ID
	zero   bool      // elem of gSlice has size 0
}

type goField struct {
	id     uint32
	name   string
	offset uintptr
	typ    *goType
}

var (
	goTypes   sync.Map // reflect.Type → *goType
	goTypesMu sync.Mutex
)

var (
	rtPrincipal  = reflect.TypeFor[principal.Principal]()
	rtNatural    = reflect.TypeFor[Natural]()
	rtInteger    = reflect.TypeFor[Integer]()
	rtBigIntPtr  = reflect.TypeFor[*big.Int]()
	rtUnit       = reflect.TypeFor[Unit]()
	rtIgnore     = reflect.TypeFor[Ignore]()
	rtOneOf      = reflect.TypeFor[OneOf]()
	rtFuncRef    = reflect.TypeFor[FuncRef]()
	rtServiceRef = reflect.TypeFor[ServiceRef]()

	// principalIsString: principal.Principal is a struct holding just its
	// raw bytes as a string, so the hot path reads and writes that string in
	// place instead of copying through Bytes and FromBytes.
	principalIsString = rtPrincipal.NumField() == 1 &&
		rtPrincipal.Field(0).Type.Kind() == reflect.String &&
		rtPrincipal.Size() == unsafe.Sizeof("")
)

// typeOf returns the plan for a Go type, building it once.
func typeOf(rt reflect.Type) (*goType, error) {
	if g, ok := goTypes.Load(rt); ok {
		return g.(*goType), nil
	}
	goTypesMu.Lock()
	defer goTypesMu.Unlock()
	b := goTypeBuilder{building: map[reflect.Type]*goType{}}
	g, err := b.build(rt)
	if err != nil {
		return nil, err
	}
	for t, gt := range b.building {
		goTypes.LoadOrStore(t, gt)
	}
	return g, nil
}

type goTypeBuilder struct {
	building map[reflect.Type]*goType
}

func (b *goTypeBuilder) build(rt reflect.Type) (*goType, error) {
	if g, ok := goTypes.Load(rt); ok {
		return g.(*goType), nil
	}
	if g, ok := b.building[rt]; ok {
		return g, nil // recursive: its ctype is a placeholder defined later
	}
	g := &goType{rt: rt, size: rt.Size(), ctype: Placeholder()}
	b.building[rt] = g
	def, err := b.fill(g)
	if err != nil {
		return nil, fmt.Errorf("candid: Go type %s: %w", rt, err)
	}
	if err := g.ctype.Define(def); err != nil {
		return nil, err
	}
	g.ctype = g.ctype.Resolved()
	return g, nil
}

func (b *goTypeBuilder) fill(g *goType) (*Type, error) {
	rt := g.rt
	switch rt {
	case rtPrincipal:
		g.kind = gPrincipal
		return Principal(), nil
	case rtNatural:
		g.kind = gNatural
		return Nat(), nil
	case rtInteger:
		g.kind = gInteger
		return Int(), nil
	case rtBigIntPtr:
		g.kind = gBigInt
		return Int(), nil
	case rtUnit:
		g.kind = gUnit
		return Null(), nil
	case rtIgnore:
		g.kind = gIgnore
		return Reserved(), nil
	case rtFuncRef:
		g.kind = gFuncRef
		return Func(nil, nil), nil
	case rtServiceRef:
		g.kind = gServiceRef
		return Service(), nil
	}
	switch rt.Kind() {
	case reflect.Bool:
		g.kind = gBool
		return Bool(), nil
	case reflect.Uint8:
		g.kind = gUint8
		return Nat8(), nil
	case reflect.Uint16:
		g.kind = gUint16
		return Nat16(), nil
	case reflect.Uint32:
		g.kind = gUint32
		return Nat32(), nil
	case reflect.Uint64, reflect.Uint, reflect.Uintptr:
		g.kind = gUint64
		return Nat64(), nil
	case reflect.Int8:
		g.kind = gInt8
		return Int8(), nil
	case reflect.Int16:
		g.kind = gInt16
		return Int16(), nil
	case reflect.Int32:
		g.kind = gInt32
		return Int32(), nil
	case reflect.Int64, reflect.Int:
		g.kind = gInt64
		return Int64(), nil
	case reflect.Float32:
		g.kind = gFloat32
		return Float32(), nil
	case reflect.Float64:
		g.kind = gFloat64
		return Float64(), nil
	case reflect.String:
		g.kind = gString
		return Text(), nil
	case reflect.Slice:
		if rt.Elem().Kind() == reflect.Uint8 {
			g.kind = gBytes
			return Vec(Nat8()), nil
		}
		el, err := b.build(rt.Elem())
		if err != nil {
			return nil, err
		}
		g.kind, g.elem, g.zero = gSlice, el, rt.Elem().Size() == 0
		return Vec(el.ctype), nil
	case reflect.Pointer:
		el, err := b.build(rt.Elem())
		if err != nil {
			return nil, err
		}
		g.kind, g.elem = gPtr, el
		return Opt(el.ctype), nil
	case reflect.Struct:
		return b.structType(g)
	}
	return nil, fmt.Errorf("no Candid mapping for Go kind %s", rt.Kind())
}

func (b *goTypeBuilder) structType(g *goType) (*Type, error) {
	rt := g.rt
	variant := false
	for i := 0; i < rt.NumField(); i++ {
		if f := rt.Field(i); f.Anonymous && f.Type == rtOneOf {
			variant = true
		}
	}
	var fields []goField
	seen := map[uint32]string{}
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		if f.Anonymous && f.Type == rtOneOf {
			continue
		}
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("candid"); ok {
			tag, _, _ = strings.Cut(tag, ",")
			if tag == "-" {
				continue
			}
			if tag != "" {
				name = tag
			}
		}
		id := FieldHash(name)
		label := name
		if n, err := strconv.ParseUint(name, 10, 32); err == nil {
			id, label = uint32(n), ""
		}
		if other, dup := seen[id]; dup {
			return nil, fmt.Errorf("fields %s and %s have the same Candid id %d", other, f.Name, id)
		}
		seen[id] = f.Name
		ft := f.Type
		if variant {
			if ft.Kind() != reflect.Pointer {
				return nil, fmt.Errorf("variant case %s must be a pointer", f.Name)
			}
			ft = ft.Elem()
		}
		fg, err := b.build(ft)
		if err != nil {
			return nil, err
		}
		fields = append(fields, goField{id: id, name: label, offset: f.Offset, typ: fg})
	}
	sortGoFields(fields)
	g.fields = fields
	cf := make([]Field, len(fields))
	for i, f := range fields {
		t := f.typ.ctype
		if variant && f.typ.rt.Kind() == reflect.Struct && f.typ.rt.NumField() == 0 {
			t = Null() // *struct{}: a case without data
		}
		cf[i] = Field{ID: f.id, Name: f.name, Type: t}
	}
	if variant {
		g.kind = gVariant
		return &Type{Kind: KindVariant, Fields: cf}, nil
	}
	g.kind = gRecord
	return &Type{Kind: KindRecord, Fields: cf}, nil
}

func sortGoFields(fs []goField) {
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fs[j].id < fs[j-1].id; j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
}

// TypeOf returns the Candid type that Marshal uses for values of Go type rt.
func TypeOf(rt reflect.Type) (*Type, error) {
	g, err := typeOf(rt)
	if err != nil {
		return nil, err
	}
	return g.ctype, nil
}

// unit reports whether a variant case's Go type carries no data.
func (g *goType) unitCase() bool {
	return g.rt.Kind() == reflect.Struct && g.rt.NumField() == 0 || g.kind == gUnit
}
