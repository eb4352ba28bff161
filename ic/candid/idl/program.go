package idl

import (
	"errors"
	"fmt"

	"alpnib.dev/ic/candid"
)

// Program is a checked Candid service description: its named types and its
// main service, as candid types ready to encode and decode with.
type Program struct {
	// Types maps every type name defined in the file and its imports to its
	// type. A recursive definition is a cycle in the graph; a name defined as
	// another name may be an alias node, so look at t.Resolved().
	Types map[string]*candid.Type
	// Service is the main service (a candid.KindService type), or nil when the
	// file declares none. Methods of `import service` files are merged in.
	Service *candid.Type
	// Init holds the initialisation arguments when the main service is a
	// class (`service : (nat) -> { … }`); it is nil otherwise.
	Init []*candid.Type
	// IsClass reports whether the main service is a class.
	IsClass bool

	builder *builder // resolves names in annotations of ParseValues
}

// Method is a service method with its signature unpacked.
type Method struct {
	Name          string
	Args, Results []*candid.Type
	Modes         []candid.FuncMode
}

// Query reports whether the method is a query (or composite query).
func (m Method) Query() bool {
	for _, x := range m.Modes {
		if x == candid.ModeQuery || x == candid.ModeCompositeQuery {
			return true
		}
	}
	return false
}

// Methods lists the main service's methods sorted by name.
func (p *Program) Methods() []Method {
	if p.Service == nil {
		return nil
	}
	s := p.Service.Resolved()
	out := make([]Method, 0, len(s.Methods))
	for _, m := range s.Methods {
		f := m.Type.Resolved()
		out = append(out, Method{Name: m.Name, Args: f.Args, Results: f.Results, Modes: f.Modes})
	}
	return out
}

// Method finds a method of the main service by name.
func (p *Program) Method(name string) (Method, bool) {
	for _, m := range p.Methods() {
		if m.Name == name {
			return m, true
		}
	}
	return Method{}, false
}

// ParseFile reads a .did file with its imports (relative to the importing
// file), checks it as the reference implementation does, and returns its
// types and service. Errors name file:line:column.
func ParseFile(path string) (*Program, error) {
	main, imported, err := loadProgram(path)
	if err != nil {
		return nil, err
	}
	return program(main, imported)
}

// Parse reads a service description held in memory. name is used in error
// positions. It refuses imports, which need a file system to resolve: use
// ParseFile for those.
func Parse(name string, src []byte) (*Program, error) {
	if len(src) > maxSourceSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, maxSourceSize)
	}
	f, err := parseSource(name, string(src), false)
	if err != nil {
		return nil, err
	}
	if len(f.imports) > 0 {
		return nil, errorf(f.imports[0].pos, "import needs ParseFile")
	}
	return program(f, nil)
}

func program(main *fileAST, imported []source) (*Program, error) {
	c, err := checkProgram(main, imported)
	if err != nil {
		return nil, err
	}
	b, err := newBuilder(c.env)
	if err != nil {
		return nil, err
	}
	p := &Program{Types: b.named, builder: b}
	if c.service != nil {
		s, err := b.build(c.service)
		if err != nil {
			return nil, err
		}
		p.Service = s
		if c.actor.class {
			p.IsClass = true
			if p.Init, err = b.tuple(c.actor.args); err != nil {
				return nil, err
			}
			if p.Init == nil {
				p.Init = []*candid.Type{}
			}
		}
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	return p, nil
}

// check runs candid's own graph check as a last line of defence: a type the
// parser accepted must be one the encoder and decoder accept.
func (p *Program) check() error {
	var errs []error
	for name, t := range p.Types {
		if err := t.Check(); err != nil {
			errs = append(errs, fmt.Errorf("type %s: %w", name, err))
		}
	}
	if p.Service != nil {
		if err := p.Service.Check(); err != nil {
			errs = append(errs, fmt.Errorf("service: %w", err))
		}
	}
	return errors.Join(errs...)
}
