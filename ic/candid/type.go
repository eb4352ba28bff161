// Package candid implements the Candid binary format of the Internet
// Computer: a type model (Type) that can describe every Candid type including
// recursive ones, a dynamic value model (Value) for tools and the official
// conformance suite, and a reflection-free hot path that maps Go values
// through `candid:"name"` struct tags (Marshal, Unmarshal).
//
// Decoding follows the Candid subtyping rules so that a newer canister's reply
// still decodes into an older client's types: extra record fields are
// ignored, missing opt/null/reserved fields read as null, an opt whose
// content does not fit reads as null, reserved accepts anything, extra
// arguments are skipped and missing trailing opt/null/reserved arguments are
// filled. Hostile input fails fast with a *DecodeError: lengths are checked
// against the bytes present before anything is allocated, nesting is bounded
// and every message has a work budget.
//
// Go values map to Candid by kind: bool; uint8…uint64 are nat8…nat64 (uint
// is nat64); int8…int64 are int8…int64 (int is int64); float32/float64;
// string is text; []byte is blob; a slice is vec; a pointer is opt (nil is
// null); a struct is a record whose fields are named by `candid:"name"`
// tags (a number names a field by id, as in tuples; "-" skips a field); a
// struct embedding OneOf is a variant; principal.Principal is principal;
// Natural and Integer are nat and int; Unit is null and Ignore reserved.
package candid

import (
	"fmt"
	"sort"
)

// Kind says which Candid type constructor a Type is.
type Kind uint8

// The Candid type constructors. The zero Kind is not a type: it marks a
// placeholder that has not been defined yet (see Placeholder).
const (
	kindPlaceholder Kind = iota
	KindNull
	KindBool
	KindNat
	KindInt
	KindNat8
	KindNat16
	KindNat32
	KindNat64
	KindInt8
	KindInt16
	KindInt32
	KindInt64
	KindFloat32
	KindFloat64
	KindText
	KindReserved
	KindEmpty
	KindPrincipal
	KindOpt
	KindVec
	KindRecord
	KindVariant
	KindFunc
	KindService
	// KindFuture is a type from a newer Candid version that this decoder
	// does not know (a type-table opcode below -24). Its values can only be
	// skipped, and it is a subtype only of opt and reserved.
	KindFuture
	// kindAlias is a placeholder defined as another, not yet defined,
	// placeholder. Resolved follows it.
	kindAlias
)

var kindNames = [...]string{
	kindPlaceholder: "<undefined>",
	KindNull:        "null",
	KindBool:        "bool",
	KindNat:         "nat",
	KindInt:         "int",
	KindNat8:        "nat8",
	KindNat16:       "nat16",
	KindNat32:       "nat32",
	KindNat64:       "nat64",
	KindInt8:        "int8",
	KindInt16:       "int16",
	KindInt32:       "int32",
	KindInt64:       "int64",
	KindFloat32:     "float32",
	KindFloat64:     "float64",
	KindText:        "text",
	KindReserved:    "reserved",
	KindEmpty:       "empty",
	KindPrincipal:   "principal",
	KindOpt:         "opt",
	KindVec:         "vec",
	KindRecord:      "record",
	KindVariant:     "variant",
	KindFunc:        "func",
	KindService:     "service",
	KindFuture:      "<future type>",
	kindAlias:       "<alias>",
}

// String returns the Candid keyword of the kind.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// IsPrimitive reports whether the kind is encoded as a single negative opcode
// rather than as a type-table entry (principal counts as primitive).
func (k Kind) IsPrimitive() bool { return k >= KindNull && k <= KindPrincipal }

// FuncMode is a function annotation, with its byte value on the wire.
type FuncMode uint8

// The function annotations Candid knows.
const (
	ModeQuery          FuncMode = 1
	ModeOneway         FuncMode = 2
	ModeCompositeQuery FuncMode = 3
)

// String returns the annotation as written in a .did file.
func (m FuncMode) String() string {
	switch m {
	case ModeQuery:
		return "query"
	case ModeOneway:
		return "oneway"
	case ModeCompositeQuery:
		return "composite_query"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// Type is one node of a Candid type graph. Compound types point at their
// component types, so a recursive type is simply a graph with a cycle:
//
//	// type List = opt record { head : int; tail : List };
//	list := candid.Placeholder()
//	list.Define(candid.Opt(candid.Record(
//		candid.NamedField("head", candid.Int()),
//		candid.NamedField("tail", list),
//	)))
//
// Primitive constructors (Nat(), Text(), …) return shared immutable nodes; do
// not modify a Type after it has been used to encode or decode.
type Type struct {
	// Kind is the type constructor.
	Kind Kind
	// Elem is the component of opt and vec (and the target of an alias).
	Elem *Type
	// Fields of a record or variant, sorted by ID, IDs unique.
	Fields []Field
	// Args and Results of a func type.
	Args, Results []*Type
	// Modes of a func type, in the order they are encoded.
	Modes []FuncMode
	// Methods of a service, sorted by name (byte order), names unique; each
	// method's Type is a func type (or a placeholder defined as one).
	Methods []Method
	// Opcode is the type-table opcode of a KindFuture type, for messages.
	Opcode int64
}

// Field is a record or variant field. ID is the field's number: the hash of
// its name (FieldHash) or the number written in the source for numeric and
// tuple fields. Name is empty when the field was given by number.
type Field struct {
	ID   uint32
	Name string
	Type *Type
}

// Method is one method of a service type.
type Method struct {
	Name string
	Type *Type
}

// FieldHash is Candid's field-name hash: the sum of the name's UTF-8 bytes,
// each times 223 to the power of its distance from the end, modulo 2^32.
func FieldHash(name string) uint32 {
	var h uint32
	for i := 0; i < len(name); i++ {
		h = h*223 + uint32(name[i])
	}
	return h
}

// NamedField returns a field called name (its ID is FieldHash(name)).
func NamedField(name string, t *Type) Field {
	return Field{ID: FieldHash(name), Name: name, Type: t}
}

// IDField returns a field given by number, as in `record { 0 : nat }`.
func IDField(id uint32, t *Type) Field { return Field{ID: id, Type: t} }

var primitives = func() [KindPrincipal + 1]*Type {
	var p [KindPrincipal + 1]*Type
	for k := KindNull; k <= KindPrincipal; k++ {
		p[k] = &Type{Kind: k}
	}
	return p
}()

// Prim returns the shared node of a primitive kind (KindNull … KindPrincipal).
// It returns nil for other kinds.
func Prim(k Kind) *Type {
	if k.IsPrimitive() {
		return primitives[k]
	}
	return nil
}

// Shared nodes for the primitive types.
func Null() *Type      { return primitives[KindNull] }
func Bool() *Type      { return primitives[KindBool] }
func Nat() *Type       { return primitives[KindNat] }
func Int() *Type       { return primitives[KindInt] }
func Nat8() *Type      { return primitives[KindNat8] }
func Nat16() *Type     { return primitives[KindNat16] }
func Nat32() *Type     { return primitives[KindNat32] }
func Nat64() *Type     { return primitives[KindNat64] }
func Int8() *Type      { return primitives[KindInt8] }
func Int16() *Type     { return primitives[KindInt16] }
func Int32() *Type     { return primitives[KindInt32] }
func Int64() *Type     { return primitives[KindInt64] }
func Float32() *Type   { return primitives[KindFloat32] }
func Float64() *Type   { return primitives[KindFloat64] }
func Text() *Type      { return primitives[KindText] }
func Reserved() *Type  { return primitives[KindReserved] }
func Empty() *Type     { return primitives[KindEmpty] }
func Principal() *Type { return primitives[KindPrincipal] }

// Opt returns `opt t`.
func Opt(t *Type) *Type { return &Type{Kind: KindOpt, Elem: t} }

// Vec returns `vec t`. A blob is Vec(Nat8()).
func Vec(t *Type) *Type { return &Type{Kind: KindVec, Elem: t} }

// Record returns a record of the fields, sorted by ID. Duplicate IDs are
// reported by Check (and by the encoder and decoder), not here.
func Record(fields ...Field) *Type {
	return &Type{Kind: KindRecord, Fields: sortFields(fields)}
}

// Tuple returns `record { t0; t1; … }`: fields numbered from 0.
func Tuple(ts ...*Type) *Type {
	fs := make([]Field, len(ts))
	for i, t := range ts {
		fs[i] = Field{ID: uint32(i), Type: t}
	}
	return &Type{Kind: KindRecord, Fields: fs}
}

// Variant returns a variant of the fields, sorted by ID.
func Variant(fields ...Field) *Type {
	return &Type{Kind: KindVariant, Fields: sortFields(fields)}
}

// Func returns a func type with the given argument and result types.
func Func(args, results []*Type, modes ...FuncMode) *Type {
	return &Type{Kind: KindFunc, Args: args, Results: results, Modes: modes}
}

// Service returns a service type with the methods sorted by name.
func Service(methods ...Method) *Type {
	ms := append([]Method(nil), methods...)
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].Name < ms[j].Name })
	return &Type{Kind: KindService, Methods: ms}
}

func sortFields(fields []Field) []Field {
	fs := append([]Field(nil), fields...)
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].ID < fs[j].ID })
	return fs
}

// Placeholder returns an undefined type node to be defined later with
// Define. Use it to build recursive types: refer to the placeholder inside
// the definition, then Define it (see the example on Type).
func Placeholder() *Type { return &Type{Kind: kindPlaceholder} }

// Define makes the placeholder t stand for def, tying the knot of a
// recursive type. When def is itself a placeholder not defined yet (an alias
// such as `type A = B;` read before B), t follows def once def is defined;
// Resolved and every encoder and decoder follow such aliases. Define fails
// when t was already defined or when def is t itself.
func (t *Type) Define(def *Type) error {
	if t == nil || def == nil {
		return fmt.Errorf("candid: Define with a nil type")
	}
	if t.Kind != kindPlaceholder {
		return fmt.Errorf("candid: Define on a type that is already %s", t.Kind)
	}
	if def == t {
		return fmt.Errorf("candid: a type cannot be defined as itself")
	}
	switch def.Kind {
	case kindPlaceholder, kindAlias:
		*t = Type{Kind: kindAlias, Elem: def}
	default:
		*t = *def
	}
	return nil
}

// IsDefined reports whether the type (after following aliases) has been
// defined.
func (t *Type) IsDefined() bool { return t.Resolved().Kind != kindPlaceholder }

// Resolved follows aliases created by Define and returns the node that
// carries the definition. For an alias cycle or an undefined placeholder it
// returns a node whose Kind is not a valid type (IsDefined is false).
func (t *Type) Resolved() *Type {
	for i := 0; t != nil && t.Kind == kindAlias; i++ {
		if i > 1000 {
			return &Type{Kind: kindPlaceholder}
		}
		t = t.Elem
	}
	return t
}

// Check validates the whole graph reachable from t: every placeholder
// defined, fields sorted with unique IDs, methods sorted with unique names
// and of func type. Encoders and decoders call it; callers building types
// by hand can call it to get an early error.
func (t *Type) Check() error {
	return checkGraph(t, map[*Type]bool{})
}

func checkGraph(t *Type, seen map[*Type]bool) error {
	t = t.Resolved()
	if t == nil {
		return fmt.Errorf("candid: nil type")
	}
	if seen[t] {
		return nil
	}
	seen[t] = true
	switch t.Kind {
	case kindPlaceholder, kindAlias:
		return fmt.Errorf("candid: type used but never defined")
	case KindOpt, KindVec:
		return checkGraph(t.Elem, seen)
	case KindRecord, KindVariant:
		for i, f := range t.Fields {
			if i > 0 && t.Fields[i-1].ID >= f.ID {
				if t.Fields[i-1].ID == f.ID {
					return fmt.Errorf("candid: %s has two fields with id %d", t.Kind, f.ID)
				}
				return fmt.Errorf("candid: %s fields not sorted by id", t.Kind)
			}
			if err := checkGraph(f.Type, seen); err != nil {
				return err
			}
		}
	case KindFunc:
		for _, a := range t.Args {
			if err := checkGraph(a, seen); err != nil {
				return err
			}
		}
		for _, r := range t.Results {
			if err := checkGraph(r, seen); err != nil {
				return err
			}
		}
		for _, m := range t.Modes {
			if m < ModeQuery || m > ModeCompositeQuery {
				return fmt.Errorf("candid: unknown func annotation %d", m)
			}
		}
	case KindService:
		for i, m := range t.Methods {
			if i > 0 && t.Methods[i-1].Name >= m.Name {
				return fmt.Errorf("candid: service methods not sorted or duplicated at %q", m.Name)
			}
			mt := m.Type.Resolved()
			if mt == nil || (mt.Kind != KindFunc && mt.Kind != kindPlaceholder) {
				return fmt.Errorf("candid: service method %q is not a func", m.Name)
			}
			if err := checkGraph(m.Type, seen); err != nil {
				return err
			}
		}
	}
	return nil
}
