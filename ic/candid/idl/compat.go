package idl

import (
	"fmt"
	"slices"
	"strings"

	"alpnib.dev/ic/candid"
)

// CheckMethod checks a client's view of a method against the service
// description: the argument types the client encodes with, and the result
// types it decodes the reply at. The arguments must be subtypes of the
// method's parameters (the canister can decode them) and the method's
// results subtypes of the client's (the client can decode the reply).
//
// The check is stricter than Candid's subtyping in one place, on purpose:
// Candid lets any type be read at an opt type (a mismatch becomes null), which
// is right for a decoder but would hide a wrong client type as a silent null.
// Here `opt t` accepts null, opt of a subtype of t, or a subtype of t itself,
// and nothing else. The error names the path to the first mismatch.
func (p *Program) CheckMethod(name string, args, results []*candid.Type) error {
	m, ok := p.Method(name)
	if !ok {
		return fmt.Errorf("service has no method %q", name)
	}
	c := compat{assumed: map[[2]*candid.Type]bool{}}
	if err := c.tuple(args, m.Args, "argument"); err != nil {
		return fmt.Errorf("method %s: %w", name, err)
	}
	if err := c.tuple(m.Results, results, "result"); err != nil {
		return fmt.Errorf("method %s: %w", name, err)
	}
	return nil
}

// Compatible reports whether every value of sub can be read as sup with the
// strict rules of CheckMethod, or names the path where it cannot.
func Compatible(sub, sup *candid.Type) error {
	c := compat{assumed: map[[2]*candid.Type]bool{}}
	return c.sub(sub, sup)
}

type compat struct {
	assumed map[[2]*candid.Type]bool
}

// mismatch is a failure with the path from the outermost type to it.
type mismatch struct {
	path []string
	msg  string
}

func (m *mismatch) Error() string {
	if len(m.path) == 0 {
		return m.msg
	}
	return strings.Join(m.path, ": ") + ": " + m.msg
}

func within(step string, err error) error {
	if err == nil {
		return nil
	}
	if m, ok := err.(*mismatch); ok {
		m.path = append([]string{step}, m.path...)
		return m
	}
	return fmt.Errorf("%s: %w", step, err)
}

func fails(sub, sup *candid.Type) error {
	return &mismatch{msg: fmt.Sprintf("%s is not a subtype of %s", sub, sup)}
}

// tuple checks sub <: sup for argument or result sequences: extra values in
// sub are ignored by a decoder; missing ones must have a null.
func (c compat) tuple(sub, sup []*candid.Type, what string) error {
	for i, t := range sup {
		step := fmt.Sprintf("%s %d", what, i+1)
		if i >= len(sub) {
			if _, ok := absent(t); !ok {
				return within(step, &mismatch{msg: fmt.Sprintf("missing, and %s has no null", t)})
			}
			continue
		}
		if err := c.sub(sub[i], t); err != nil {
			return within(step, err)
		}
	}
	return nil
}

func (c compat) sub(t1, t2 *candid.Type) error {
	a, b := t1.Resolved(), t2.Resolved()
	if a == nil || b == nil {
		return &mismatch{msg: "undefined type"}
	}
	if b.Kind == candid.KindReserved || a.Kind == candid.KindEmpty {
		return nil
	}
	key := [2]*candid.Type{a, b}
	if c.assumed[key] {
		return nil // coinduction: a recursive pair under comparison holds
	}
	c.assumed[key] = true
	err := c.structural(a, b)
	if err != nil {
		delete(c.assumed, key)
	}
	return err
}

func (c compat) structural(a, b *candid.Type) error {
	switch {
	case b.Kind == candid.KindOpt:
		switch a.Kind {
		case candid.KindNull:
			return nil
		case candid.KindOpt:
			return within("opt", c.sub(a.Elem, b.Elem))
		case candid.KindReserved:
			return fails(a, b)
		}
		if k := b.Elem.Resolved().Kind; k == candid.KindNull || k == candid.KindOpt || k == candid.KindReserved {
			return fails(a, b)
		}
		return within("opt", c.sub(a, b.Elem))
	case a.Kind == candid.KindNat && b.Kind == candid.KindInt:
		return nil
	case a.Kind == candid.KindService && b.Kind == candid.KindPrincipal:
		return nil
	case a.Kind != b.Kind:
		return fails(a, b)
	}
	switch a.Kind {
	case candid.KindVec:
		return within("vec", c.sub(a.Elem, b.Elem))
	case candid.KindRecord:
		have := map[uint32]candid.Field{}
		for _, f := range a.Fields {
			have[f.ID] = f
		}
		for _, f := range b.Fields {
			g, ok := have[f.ID]
			if !ok {
				if _, ok := absent(f.Type); !ok {
					return within("field "+fieldName(f), &mismatch{msg: fmt.Sprintf("missing, and %s has no null", f.Type)})
				}
				continue
			}
			if err := c.sub(g.Type, f.Type); err != nil {
				return within("field "+fieldName(f), err)
			}
		}
		return nil
	case candid.KindVariant:
		want := map[uint32]candid.Field{}
		for _, f := range b.Fields {
			want[f.ID] = f
		}
		for _, f := range a.Fields {
			g, ok := want[f.ID]
			if !ok {
				return within("case "+fieldName(f), &mismatch{msg: "not in the expected variant"})
			}
			if err := c.sub(f.Type, g.Type); err != nil {
				return within("case "+fieldName(f), err)
			}
		}
		return nil
	case candid.KindFunc:
		if !slices.Equal(a.Modes, b.Modes) {
			return &mismatch{msg: fmt.Sprintf("annotations %v differ from %v", a.Modes, b.Modes)}
		}
		if err := c.tuple(b.Args, a.Args, "argument"); err != nil {
			return within("func", err)
		}
		return within("func", c.tuple(a.Results, b.Results, "result"))
	case candid.KindService:
		have := map[string]*candid.Type{}
		for _, m := range a.Methods {
			have[m.Name] = m.Type
		}
		for _, m := range b.Methods {
			t, ok := have[m.Name]
			if !ok {
				return within("method "+m.Name, &mismatch{msg: "missing"})
			}
			if err := c.sub(t, m.Type); err != nil {
				return within("method "+m.Name, err)
			}
		}
		return nil
	}
	return nil // equal primitive kinds
}
