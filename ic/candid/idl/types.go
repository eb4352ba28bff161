package idl

import (
	"fmt"

	"alpnib.dev/ic/candid"
)

// builder turns checked type expressions into candid.Type graphs. Every
// definition gets one placeholder node, so a name used twice is the same
// node and a recursive definition becomes a cycle in the graph.
type builder struct {
	env   *env
	named map[string]*candid.Type
}

func newBuilder(e *env) (*builder, error) {
	b := &builder{env: e, named: make(map[string]*candid.Type, len(e.defs))}
	for name := range e.defs {
		b.named[name] = candid.Placeholder()
	}
	// Define in source order; an alias of a name defined later is tied by
	// Define itself once that name is defined.
	for _, name := range e.sortedNames() {
		d := e.defs[name]
		t, err := b.build(d.typ)
		if err != nil {
			return nil, err
		}
		if err := b.named[name].Define(t); err != nil {
			return nil, errorf(d.pos, "define %s: %v", name, err)
		}
	}
	return b, nil
}

func (b *builder) build(t typeExpr) (*candid.Type, error) {
	switch t := t.(type) {
	case *primType:
		k, ok := primKinds[t.name]
		if !ok {
			return nil, errorf(t.pos, "unknown primitive type %s", t.name)
		}
		return candid.Prim(k), nil
	case *namedType:
		n, ok := b.named[t.name]
		if !ok {
			return nil, errorf(t.pos, "unbound type identifier %s", t.name)
		}
		return n, nil
	case *optType:
		e, err := b.build(t.elem)
		if err != nil {
			return nil, err
		}
		return candid.Opt(e), nil
	case *vecType:
		e, err := b.build(t.elem)
		if err != nil {
			return nil, err
		}
		return candid.Vec(e), nil
	case *recordType:
		fs, err := b.fields(t.fields)
		if err != nil {
			return nil, err
		}
		return candid.Record(fs...), nil
	case *variantType:
		fs, err := b.fields(t.fields)
		if err != nil {
			return nil, err
		}
		return candid.Variant(fs...), nil
	case *funcType:
		return b.function(t)
	case *serviceType:
		ms := make([]candid.Method, 0, len(t.methods))
		for _, m := range t.methods {
			mt, err := b.build(m.typ)
			if err != nil {
				return nil, err
			}
			ms = append(ms, candid.Method{Name: m.name, Type: mt})
		}
		return candid.Service(ms...), nil
	}
	return nil, fmt.Errorf("idl: unknown type node %T", t)
}

func (b *builder) fields(fs []fieldType) ([]candid.Field, error) {
	out := make([]candid.Field, len(fs))
	for i, f := range fs {
		t, err := b.build(f.typ)
		if err != nil {
			return nil, err
		}
		out[i] = candid.Field{ID: f.label.id, Type: t}
		if !f.label.num {
			out[i].Name = f.label.name
		}
	}
	return out, nil
}

func (b *builder) tuple(as []argType) ([]*candid.Type, error) {
	out := make([]*candid.Type, len(as))
	for i, a := range as {
		t, err := b.build(a.typ)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

func (b *builder) function(f *funcType) (*candid.Type, error) {
	args, err := b.tuple(f.args)
	if err != nil {
		return nil, err
	}
	results, err := b.tuple(f.results)
	if err != nil {
		return nil, err
	}
	var modes []candid.FuncMode
	for _, m := range f.modes {
		modes = append(modes, funcModes[m])
	}
	return candid.Func(args, results, modes...), nil
}

var funcModes = map[string]candid.FuncMode{
	"query":           candid.ModeQuery,
	"oneway":          candid.ModeOneway,
	"composite_query": candid.ModeCompositeQuery,
}

var primKinds = map[string]candid.Kind{
	"null": candid.KindNull, "bool": candid.KindBool,
	"nat": candid.KindNat, "int": candid.KindInt,
	"nat8": candid.KindNat8, "nat16": candid.KindNat16, "nat32": candid.KindNat32, "nat64": candid.KindNat64,
	"int8": candid.KindInt8, "int16": candid.KindInt16, "int32": candid.KindInt32, "int64": candid.KindInt64,
	"float32": candid.KindFloat32, "float64": candid.KindFloat64,
	"text": candid.KindText, "reserved": candid.KindReserved, "empty": candid.KindEmpty,
	"principal": candid.KindPrincipal,
}
