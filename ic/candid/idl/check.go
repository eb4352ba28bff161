package idl

import (
	"fmt"
	"sort"
)

// env holds the type definitions of a program, all files together: Candid
// imports are textual inclusion into one flat name space.
type env struct {
	defs map[string]typeDef
}

func newEnv() *env { return &env{defs: map[string]typeDef{}} }

func (e *env) add(d typeDef) error {
	if prev, dup := e.defs[d.name]; dup {
		return errorf(d.pos, "duplicate binding for %s (first defined at %s)", d.name, prev.pos)
	}
	d.seq = len(e.defs)
	e.defs[d.name] = d
	return nil
}

// resolve follows type names to the first type that is not a name. It fails
// on an unbound name or on a cycle made only of names (type A = B; type B = A),
// which describes no type at all.
func (e *env) resolve(t typeExpr) (typeExpr, error) {
	var seen map[string]bool
	for {
		n, ok := t.(*namedType)
		if !ok {
			return t, nil
		}
		d, ok := e.defs[n.name]
		if !ok {
			return nil, errorf(n.pos, "unbound type identifier %s", n.name)
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		if seen[n.name] {
			return nil, errorf(d.pos, "%s has cyclic type definition", n.name)
		}
		seen[n.name] = true
		t = d.typ
	}
}

// sortedNames lists the definitions in source order (files by the order
// they were added), so the first error reported is the first in the text.
func (e *env) sortedNames() []string {
	names := make([]string, 0, len(e.defs))
	for n := range e.defs {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return e.defs[names[i]].seq < e.defs[names[j]].seq })
	return names
}

// checkDefs checks every definition: names bound, no vacuous cycles, method
// types that are functions, oneway functions without results.
func (e *env) checkDefs() error {
	for _, n := range e.sortedNames() {
		d := e.defs[n]
		if _, err := e.resolve(&namedType{pos: d.pos, name: n}); err != nil {
			return err
		}
		if err := e.check(d.typ); err != nil {
			return err
		}
	}
	return nil
}

// check walks a type expression.
func (e *env) check(t typeExpr) error {
	switch t := t.(type) {
	case *primType:
		return nil
	case *namedType:
		if _, ok := e.defs[t.name]; !ok {
			return errorf(t.pos, "unbound type identifier %s", t.name)
		}
		return nil
	case *optType:
		return e.check(t.elem)
	case *vecType:
		return e.check(t.elem)
	case *recordType:
		for _, f := range t.fields {
			if err := e.check(f.typ); err != nil {
				return err
			}
		}
		return nil
	case *variantType:
		for _, f := range t.fields {
			if err := e.check(f.typ); err != nil {
				return err
			}
		}
		return nil
	case *funcType:
		return e.checkFunc(t)
	case *serviceType:
		return e.checkService(t)
	}
	return fmt.Errorf("idl: unknown type node %T", t)
}

func (e *env) checkArgs(args []argType) error {
	for _, a := range args {
		if err := e.check(a.typ); err != nil {
			return err
		}
	}
	return nil
}

func (e *env) checkFunc(f *funcType) error {
	if err := e.checkArgs(f.args); err != nil {
		return err
	}
	if err := e.checkArgs(f.results); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, m := range f.modes {
		if seen[m] {
			return errorf(f.pos, "annotation %s given twice", m)
		}
		seen[m] = true
	}
	if len(f.modes) > 1 {
		return errorf(f.pos, "a function has at most one of query, composite_query, oneway")
	}
	if seen["oneway"] && len(f.results) > 0 {
		return errorf(f.pos, "oneway function has non-unit return type")
	}
	return nil
}

func (e *env) checkService(s *serviceType) error {
	seen := map[string]Pos{}
	for _, m := range s.methods {
		if prev, dup := seen[m.name]; dup {
			return errorf(m.pos, "duplicate method name %q (first at %s)", m.name, prev)
		}
		seen[m.name] = m.pos
		if err := e.check(m.typ); err != nil {
			return err
		}
		r, err := e.resolve(m.typ)
		if err != nil {
			return err
		}
		if _, ok := r.(*funcType); !ok {
			return errorf(m.pos, "method %s is a non-function type", m.name)
		}
	}
	return nil
}

// checked is a program after checking: its environment and its main service
// with the methods of `import service` files merged in (nil if none).
type checked struct {
	env     *env
	actor   *actorDecl
	service *serviceType // the resolved body of actor, with imported methods
}

// checkProgram builds the environment of a main file and its imports and
// checks it the way the reference implementation does.
func checkProgram(main *fileAST, imported []source) (*checked, error) {
	e := newEnv()
	for _, s := range imported {
		for _, d := range s.ast.defs {
			if err := e.add(d); err != nil {
				return nil, err
			}
		}
	}
	for _, d := range main.defs {
		if err := e.add(d); err != nil {
			return nil, err
		}
	}
	if err := e.checkDefs(); err != nil {
		return nil, err
	}
	c := &checked{env: e, actor: main.actor}
	var merged []methodType
	for _, s := range imported {
		if !s.service {
			continue
		}
		a := s.ast.actor
		if a == nil {
			return nil, errorf(s.from, "imported service file %q has no main service", s.ast.file)
		}
		if a.class {
			return nil, errorf(s.from, "imported service file %q has a service constructor", s.ast.file)
		}
		st, err := e.actorService(a)
		if err != nil {
			return nil, err
		}
		merged = append(merged, st.methods...)
	}
	if main.actor != nil {
		if err := e.checkArgs(main.actor.args); err != nil {
			return nil, err
		}
		st, err := e.actorService(main.actor)
		if err != nil {
			return nil, err
		}
		if len(merged) == 0 {
			c.service = st
		} else {
			c.service = &serviceType{pos: st.pos, methods: append(merged, st.methods...)}
		}
	} else if len(merged) > 0 {
		c.service = &serviceType{methods: merged}
		c.actor = &actorDecl{body: c.service}
	}
	if c.service != nil && len(merged) > 0 {
		seen := map[string]Pos{}
		for _, m := range c.service.methods {
			if prev, dup := seen[m.name]; dup {
				return nil, errorf(m.pos, "duplicate imported method name %q (also at %s)", m.name, prev)
			}
			seen[m.name] = m.pos
		}
	}
	return c, nil
}

// actorService checks the body of a service declaration and returns the
// service type it denotes.
func (e *env) actorService(a *actorDecl) (*serviceType, error) {
	if err := e.check(a.body); err != nil {
		return nil, err
	}
	r, err := e.resolve(a.body)
	if err != nil {
		return nil, err
	}
	st, ok := r.(*serviceType)
	if !ok {
		return nil, errorf(a.body.at(), "not a service type: %s", describeType(r))
	}
	return st, nil
}

func describeType(t typeExpr) string {
	switch t := t.(type) {
	case *primType:
		return t.name
	case *optType:
		return "opt " + describeType(t.elem)
	case *vecType:
		return "vec " + describeType(t.elem)
	case *recordType:
		return "record {…}"
	case *variantType:
		return "variant {…}"
	case *funcType:
		return "func (…) -> (…)"
	case *serviceType:
		return "service {…}"
	case *namedType:
		return t.name
	}
	return "?"
}
