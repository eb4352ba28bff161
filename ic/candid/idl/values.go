package idl

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/principal"
)

// ParseValues parses Candid text arguments, such as
//
//	(record { subnet_id = principal "aaaaa-aa"; node_ids = vec {} }, opt 5)
//
// and gives them the meaning they have at the expected types: a literal 5 is a
// nat at nat, an int at int, a float64 at float64; a record drops fields the
// type does not have and fills missing opt, null and reserved fields; `opt`
// may be left out around a value whose type is not itself optional. Missing
// trailing arguments of type opt, null or reserved read as null, as the
// binary decoder does; surplus arguments are an error, since in text they can
// only be a mistake. Type annotations (v : t) may use the primitive and
// constructed types, but no names: ParseValues has no type environment.
func ParseValues(text string, types []*candid.Type) ([]candid.Value, error) {
	return parseValuesIn(nil, "", text, types)
}

// ParseValues is like the package-level ParseValues, but annotations inside
// the text may refer to the program's type names.
func (p *Program) ParseValues(text string, types []*candid.Type) ([]candid.Value, error) {
	return parseValuesIn(p.builder, "", text, types)
}

// parseValuesIn parses arguments; b resolves type names in annotations (nil:
// none are defined).
func parseValuesIn(b *builder, file, text string, types []*candid.Type) ([]candid.Value, error) {
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("candid text is not valid UTF-8")
	}
	vs, start, err := parseArgs(file, text)
	if err != nil {
		return nil, err
	}
	if b == nil {
		b = &builder{env: newEnv(), named: map[string]*candid.Type{}}
	}
	c := &coercer{b: b, checked: map[*vAnnot]*candid.Type{}}
	if len(vs) > len(types) {
		return nil, errorf(vs[len(types)].at(), "%d arguments given, the types have %d", len(vs), len(types))
	}
	out := make([]candid.Value, len(types))
	for i, t := range types {
		if i >= len(vs) {
			v, ok := absent(t)
			if !ok {
				return nil, errorf(start, "argument %d of type %s is missing", i+1, t)
			}
			out[i] = v
			continue
		}
		v, err := c.coerce(vs[i], t)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// parseArgs reads the untyped argument tree of a text; start is where it
// begins, for messages about missing arguments.
func parseArgs(file, text string) (vs []valueExpr, start Pos, err error) {
	defer catch(&err)
	p := newParser(file, text)
	start = p.peek().pos
	if vs, err = p.args(); err != nil {
		return nil, start, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, start, errorf(t.pos, "unexpected %s after the arguments", t.describe())
	}
	return vs, start, nil
}

// absent is the value a missing argument or record field takes: null for
// types that have one, as Candid's subtyping says.
func absent(t *candid.Type) (candid.Value, bool) {
	switch t.Resolved().Kind {
	case candid.KindOpt:
		return candid.None(), true
	case candid.KindNull:
		return candid.NullValue(), true
	case candid.KindReserved:
		return candid.ReservedValue(), true
	}
	return candid.Value{}, false
}

type coercer struct {
	b       *builder
	checked map[*vAnnot]*candid.Type // annotations already checked, with their type
}

// coerce gives the text value v its meaning at type t.
func (c *coercer) coerce(v valueExpr, t *candid.Type) (candid.Value, error) {
	rt := t.Resolved()
	if rt == nil || !rt.IsDefined() {
		return candid.Value{}, errorf(v.at(), "type is not defined")
	}
	if a, ok := v.(*vAnnot); ok {
		return c.annotated(a, t)
	}
	switch rt.Kind {
	case candid.KindReserved:
		return candid.ReservedValue(), nil
	case candid.KindEmpty:
		return candid.Value{}, errorf(v.at(), "no value has type empty")
	case candid.KindNull:
		if _, ok := v.(*vNull); ok {
			return candid.NullValue(), nil
		}
	case candid.KindBool:
		if b, ok := v.(*vBool); ok {
			return candid.BoolValue(b.v), nil
		}
	case candid.KindNat, candid.KindInt, candid.KindNat8, candid.KindNat16, candid.KindNat32, candid.KindNat64,
		candid.KindInt8, candid.KindInt16, candid.KindInt32, candid.KindInt64:
		if n, ok := v.(*vNum); ok {
			return integer(n, rt.Kind)
		}
	case candid.KindFloat32, candid.KindFloat64:
		if n, ok := v.(*vNum); ok {
			return float(n, rt.Kind)
		}
	case candid.KindText:
		if s, ok := v.(*vText); ok {
			if !utf8.Valid(s.bytes) {
				return candid.Value{}, errorf(s.pos, "text is not valid UTF-8")
			}
			return candid.TextValue(string(s.bytes)), nil
		}
	case candid.KindOpt:
		return c.option(v, rt)
	case candid.KindVec:
		return c.vector(v, rt)
	case candid.KindRecord:
		if r, ok := v.(*vRecord); ok {
			return c.record(r, rt)
		}
	case candid.KindVariant:
		if r, ok := v.(*vVariant); ok {
			return c.variant(r, rt)
		}
	case candid.KindPrincipal:
		if p, ok := v.(*vPrincipal); ok {
			raw, err := principalBytes(p.pos, p.text)
			if err != nil {
				return candid.Value{}, err
			}
			return candid.PrincipalValue(raw), nil
		}
	case candid.KindService:
		if s, ok := v.(*vService); ok {
			raw, err := principalBytes(s.pos, s.text)
			if err != nil {
				return candid.Value{}, err
			}
			return candid.Value{Kind: candid.KindService, Bytes: raw}, nil
		}
	case candid.KindFunc:
		if f, ok := v.(*vFunc); ok {
			raw, err := principalBytes(f.pos, f.text)
			if err != nil {
				return candid.Value{}, err
			}
			return candid.Value{Kind: candid.KindFunc, Bytes: raw, Text: f.method}, nil
		}
	}
	return candid.Value{}, errorf(v.at(), "%s is not a value of type %s", describeValue(v), t)
}

// annotated handles (v : t'): v must be a value of t', and t' must be a
// subtype of the expected type t. The value then takes its meaning at t.
// Each annotation is checked once: nested annotations would otherwise be
// re-checked at every level, exponential in the depth.
func (c *coercer) annotated(a *vAnnot, t *candid.Type) (candid.Value, error) {
	at, done := c.checked[a]
	if !done {
		if err := c.b.env.check(a.typ); err != nil {
			return candid.Value{}, err
		}
		var err error
		if at, err = c.b.build(a.typ); err != nil {
			return candid.Value{}, err
		}
		if _, err := c.coerce(a.v, at); err != nil {
			return candid.Value{}, err
		}
		c.checked[a] = at
	}
	if !candid.IsSubtype(at, t) {
		return candid.Value{}, errorf(a.pos, "annotation %s is not a subtype of %s", at, t)
	}
	return c.coerce(a.v, t)
}

func (c *coercer) option(v valueExpr, t *candid.Type) (candid.Value, error) {
	switch v := v.(type) {
	case *vNull:
		return candid.None(), nil
	case *vOpt:
		inner, err := c.coerce(v.v, t.Elem)
		if err != nil {
			return candid.Value{}, err
		}
		return candid.Some(inner), nil
	}
	// A value of the constituent type stands for `opt v`, unless that type
	// has a null of its own (the same restriction as in subtyping).
	switch t.Elem.Resolved().Kind {
	case candid.KindNull, candid.KindReserved, candid.KindOpt:
		return candid.Value{}, errorf(v.at(), "%s is not a value of type %s", describeValue(v), t)
	}
	inner, err := c.coerce(v, t.Elem)
	if err != nil {
		return candid.Value{}, err
	}
	return candid.Some(inner), nil
}

func (c *coercer) vector(v valueExpr, t *candid.Type) (candid.Value, error) {
	switch v := v.(type) {
	case *vBlob:
		if t.Elem.Resolved().Kind != candid.KindNat8 {
			return candid.Value{}, errorf(v.pos, "a blob is a vec nat8, not %s", t)
		}
		return candid.BlobValue(append([]byte{}, v.bytes...)), nil
	case *vVec:
		elems := make([]candid.Value, len(v.elems))
		for i, e := range v.elems {
			ev, err := c.coerce(e, t.Elem)
			if err != nil {
				return candid.Value{}, err
			}
			elems[i] = ev
		}
		return candid.VecValue(elems...), nil
	}
	return candid.Value{}, errorf(v.at(), "%s is not a value of type %s", describeValue(v), t)
}

func (c *coercer) record(r *vRecord, t *candid.Type) (candid.Value, error) {
	given := make(map[uint32]vField, len(r.fields))
	for _, f := range r.fields {
		given[f.label.id] = f
	}
	out := make([]candid.FieldValue, 0, len(t.Fields))
	for _, ft := range t.Fields {
		f, ok := given[ft.ID]
		if !ok {
			v, ok := absent(ft.Type)
			if !ok {
				return candid.Value{}, errorf(r.pos, "record lacks field %s of type %s", fieldName(ft), ft.Type)
			}
			out = append(out, candid.FieldValue{ID: ft.ID, Name: ft.Name, Value: v})
			continue
		}
		v, err := c.coerce(f.v, ft.Type)
		if err != nil {
			return candid.Value{}, err
		}
		out = append(out, candid.FieldValue{ID: ft.ID, Name: ft.Name, Value: v})
	}
	// Fields the type does not have are dropped, as a decoder drops them.
	return candid.Value{Kind: candid.KindRecord, Fields: out}, nil
}

func (c *coercer) variant(r *vVariant, t *candid.Type) (candid.Value, error) {
	for _, ft := range t.Fields {
		if ft.ID != r.field.label.id {
			continue
		}
		v, err := c.coerce(r.field.v, ft.Type)
		if err != nil {
			return candid.Value{}, err
		}
		return candid.VariantValue(candid.FieldValue{ID: ft.ID, Name: ft.Name, Value: v}), nil
	}
	return candid.Value{}, errorf(r.field.pos, "variant type %s has no case %s", t, r.field.label)
}

func fieldName(f candid.Field) string {
	if f.Name != "" {
		return f.Name
	}
	return uintString(f.ID)
}

func principalBytes(pos Pos, text string) ([]byte, error) {
	p, err := principal.Decode(text)
	if err != nil {
		return nil, errorf(pos, "principal %q: %v", text, err)
	}
	return append([]byte{}, p.Bytes()...), nil
}

func describeValue(v valueExpr) string {
	switch v := v.(type) {
	case *vNum:
		return "the number " + v.raw
	case *vText:
		return "a text"
	case *vBool:
		return strconv.FormatBool(v.v)
	case *vNull:
		return "null"
	case *vOpt:
		return "an opt value"
	case *vVec:
		return "a vec"
	case *vBlob:
		return "a blob"
	case *vRecord:
		return "a record"
	case *vVariant:
		return "a variant"
	case *vPrincipal:
		return "a principal"
	case *vService:
		return "a service reference"
	case *vFunc:
		return "a func reference"
	case *vAnnot:
		return "an annotated value"
	}
	return "a value"
}
