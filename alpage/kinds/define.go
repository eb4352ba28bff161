package kinds

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"

	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/nns"
)

// The adapter: Define erases a typed Def into the Kind the table holds.
// It is the one place a Body, a Facts or a decoded payload meets its
// kind's type; a kind's own code is typed throughout.

// Shape is the shape of an on-chain action: the path of the variant cases
// it takes (ExecuteNnsFunction; AddOrRemoveNodeProvider.Change.ToRemove)
// and, for ExecuteNnsFunction, the function it runs. A kind claims the
// actions of its shape and no other.
type Shape struct {
	Path     string
	Function nns.NnsFunction
}

func (s Shape) String() string {
	if s.Function != nns.FunctionUnspecified {
		return fmt.Sprintf("%s(%s)", s.Path, s.Function)
	}
	return s.Path
}

var oneOfType = reflect.TypeFor[candid.OneOf]()

// ShapeOf is a's shape: the variant case it takes at every variant on the
// way down (a record's fields are followed when they hold one), and the
// function of an ExecuteNnsFunction. A nil action has the zero Shape.
func ShapeOf(a *nns.Action) Shape {
	var s Shape
	if a == nil {
		return s
	}
	if a.ExecuteNnsFunction != nil {
		s.Function = nns.NnsFunction(a.ExecuteNnsFunction.NnsFunction)
	}
	var path []string
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct || !holdsVariant(v.Type()) {
			return
		}
		variant := v.Type().NumField() > 0 && v.Type().Field(0).Type == oneOfType
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if f.Type == oneOfType || f.Type.Kind() != reflect.Pointer || v.Field(i).IsNil() || !f.IsExported() {
				continue
			}
			if !variant && !holdsVariant(f.Type.Elem()) {
				continue
			}
			path = append(path, f.Name)
			walk(v.Field(i))
			if variant {
				return // a variant takes one case
			}
		}
	}
	walk(reflect.ValueOf(a))
	s.Path = strings.Join(path, ".")
	return s
}

// holdsVariant says whether t (a struct) is a variant, or a record with a
// field that holds one.
func holdsVariant(t reflect.Type) bool {
	return holdsVariantSeen(t, map[reflect.Type]bool{})
}

func holdsVariantSeen(t reflect.Type, seen map[reflect.Type]bool) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return false
	}
	seen[t] = true
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Type == oneOfType || (f.IsExported() && f.Type.Kind() == reflect.Pointer && holdsVariantSeen(f.Type, seen)) {
			return true
		}
	}
	return false
}

// OnChain is how a kind's payload P travels on-chain: Execute or Native.
type OnChain[P any] struct {
	shape Shape
	topic nns.Topic
	// wrap makes the native action; nil for ExecuteNnsFunction.
	wrap   func(P) *nns.ProposalActionRequest
	unwrap func(*nns.Action) (P, bool)
}

// Execute is an ExecuteNnsFunction of fn, whose payload is P's Candid
// encoding, under fn's topic.
func Execute[P any](fn nns.NnsFunction) OnChain[P] {
	return OnChain[P]{shape: Shape{Path: "ExecuteNnsFunction", Function: fn}, topic: fn.Topic()}
}

// Native is a native governance action under topic: wrap makes it of a
// payload, unwrap reads the payload back out of an action of wrap's
// shape (example is one such, to take the shape from).
func Native[P any](topic nns.Topic, example P, wrap func(P) *nns.ProposalActionRequest, unwrap func(*nns.Action) (P, bool)) OnChain[P] {
	return OnChain[P]{shape: ShapeOf(wrap(example)), topic: topic, wrap: wrap, unwrap: unwrap}
}

// Define erases d into the Kind the table holds.
func Define[B any, P any, F any, PB interface {
	*B
	Block[P, F]
}](d Def[B, P, F]) Kind {
	return &defined[B, P, F, PB]{d}
}

type defined[B any, P any, F any, PB interface {
	*B
	Block[P, F]
}] struct {
	d Def[B, P, F]
}

func (k *defined[B, P, F, PB]) Name() string { return k.d.Name }

func (k *defined[B, P, F, PB]) Docs() []BlockDoc {
	first := BlockDoc{Header: k.d.Name + " { }", Since: k.d.Since, Doc: k.d.Doc, Formerly: k.d.Formerly, Type: reflect.TypeFor[B](), Generates: k.d.Generates}
	return append([]BlockDoc{first}, k.d.Nested...)
}

func (k *defined[B, P, F, PB]) Shape() Shape { return k.d.OnChain.shape }

func (k *defined[B, P, F, PB]) New() Body { return PB(new(B)) }

// block is b as the kind's block type.
func (k *defined[B, P, F, PB]) block(b Body) (PB, error) {
	blk, ok := b.(PB)
	if !ok || blk == nil {
		return nil, fmt.Errorf("a %s proposal's block is a %T, not a %T", k.d.Name, b, PB(nil))
	}
	return blk, nil
}

func (k *defined[B, P, F, PB]) LiveSubnet(b Body) string {
	blk, err := k.block(b)
	if err != nil || k.d.LiveSubnet == nil {
		return ""
	}
	return k.d.LiveSubnet(blk)
}

func (k *defined[B, P, F, PB]) Labels(b Body) []NodeRef {
	blk, err := k.block(b)
	if err != nil || k.d.Labels == nil {
		return nil
	}
	return k.d.Labels(blk)
}

func (k *defined[B, P, F, PB]) Build(b Body, live Live) (*Built, error) {
	blk, err := k.block(b)
	if err != nil {
		return nil, err
	}
	p, err := blk.Build(live)
	if err != nil {
		return nil, err
	}
	out := &Built{Parts: p.Parts, Render: p.Render, Topic: k.d.OnChain.topic}
	if out.Render == nil {
		out.Render = func(io.Writer) {}
	}
	if out.Payload, err = candid.Marshal(p.Value); err != nil {
		return nil, fmt.Errorf("encode payload: %w", err)
	}
	out.Declared = out.Payload
	if p.Declared != nil {
		if out.Declared, err = candid.Marshal(*p.Declared); err != nil {
			return nil, fmt.Errorf("encode payload: %w", err)
		}
	}
	for _, v := range p.Former {
		enc, err := candid.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encode payload as an earlier release did: %w", err)
		}
		out.Former = append(out.Former, enc)
	}
	if wrap := k.d.OnChain.wrap; wrap != nil {
		out.Action = wrap(p.Value)
	} else {
		out.Action = &nns.ProposalActionRequest{ExecuteNnsFunction: &nns.ExecuteNnsFunction{NnsFunction: int32(k.d.OnChain.shape.Function), Payload: out.Payload}}
	}
	if got := ShapeOf(out.Action); got != k.d.OnChain.shape {
		return nil, fmt.Errorf("the %s payload makes an action of shape %s, not the kind's %s", k.d.Name, got, k.d.OnChain.shape)
	}
	return out, nil
}

func (k *defined[B, P, F, PB]) Fetch(ctx context.Context, b Body, r Reader) (Facts, error) {
	blk, err := k.block(b)
	if err != nil {
		return nil, err
	}
	return blk.Fetch(ctx, r)
}

func (k *defined[B, P, F, PB]) Check(b Body, f Facts, o Options) ([]Check, bool) {
	blk, err := k.block(b)
	if err != nil {
		return []Check{{Severity: Refused, Message: err.Error()}}, false
	}
	var facts F
	if f != nil {
		var ok bool
		if facts, ok = f.(F); !ok {
			return []Check{{Severity: Refused, Message: fmt.Sprintf("a %s preflight was handed %T, not the %T its Fetch returns", k.d.Name, f, facts)}}, false
		}
	}
	return blk.Check(facts, o)
}

func (k *defined[B, P, F, PB]) Claim(a *nns.Action) (*Claimed, bool) {
	if a == nil || ShapeOf(a) != k.d.OnChain.shape {
		return nil, false
	}
	var p P
	if unwrap := k.d.OnChain.unwrap; unwrap != nil {
		var ok bool
		if p, ok = unwrap(a); !ok {
			return nil, true
		}
	} else if candid.Unmarshal(a.ExecuteNnsFunction.Payload, &p) != nil {
		return nil, true
	}
	c := &Claimed{Value: p,
		Seed:    func(ctx context.Context, s Seeder) error { return k.d.Seed(ctx, s, p) },
		Effects: func(LocalRegistry) []string { return nil },
	}
	if k.d.Changes != nil {
		c.Changes = k.d.Changes(p)
	}
	if k.d.Effects != nil {
		c.Effects = func(reg LocalRegistry) []string { return k.d.Effects(p, reg) }
	}
	return c, true
}

// generates says whether the kind proposes anything from drift; the
// table's check holds such a kind to saying for what (Def.Generates),
// which is how --help and docs/config.md list it.
func (k *defined[B, P, F, PB]) generates() bool { return k.d.Generate != nil }

func (k *defined[B, P, F, PB]) Generate(d *Drift) ([]Generated, []string) {
	if k.d.Generate == nil {
		return nil, nil
	}
	return k.d.Generate(d)
}

// ChangesOfAction is what an on-chain action changes: the changes of the
// kind that claims it; nil for an action no kind makes, or a payload that
// does not decode.
func ChangesOfAction(a *nns.Action) []Change {
	if k := Claimant(a); k != nil {
		if c, _ := k.Claim(a); c != nil {
			return c.Changes
		}
	}
	return nil
}

// Claimant is the kind of the table whose proposals make a: the one kind
// of a's shape; nil when none is, and when two are (the table's test
// refuses that) rather than the first.
func Claimant(a *nns.Action) Kind {
	var found Kind
	for _, k := range All {
		if _, mine := k.Claim(a); mine {
			if found != nil {
				return nil
			}
			found = k
		}
	}
	return found
}
