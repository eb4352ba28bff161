package candid

import (
	"fmt"
	"strings"
)

// String renders the type in Candid syntax, for messages. A type that
// contains itself is printed once as `μN.…` and its inner occurrences as
// `μN`. Output stops after maxTypeString bytes: a type graph can share
// nodes so heavily that printing it in full would take exponential time.
func (t *Type) String() string {
	var b strings.Builder
	p := typePrinter{b: &b, ids: map[*Type]int{}, open: map[*Type]bool{}, rec: map[*Type]bool{}}
	p.findRecursion(t)
	p.print(t)
	return b.String()
}

type typePrinter struct {
	b    *strings.Builder
	ids  map[*Type]int
	open map[*Type]bool
	rec  map[*Type]bool
	cut  bool
}

func (p *typePrinter) findRecursion(t *Type) {
	t = t.Resolved()
	if t == nil || t.Kind.IsPrimitive() {
		return
	}
	if p.open[t] {
		p.rec[t] = true
		return
	}
	if _, done := p.ids[t]; done {
		return
	}
	p.ids[t] = len(p.ids)
	p.open[t] = true
	for _, c := range children(t) {
		p.findRecursion(c)
	}
	p.open[t] = false
}

func children(t *Type) []*Type {
	switch t.Kind {
	case KindOpt, KindVec:
		return []*Type{t.Elem}
	case KindRecord, KindVariant:
		cs := make([]*Type, len(t.Fields))
		for i, f := range t.Fields {
			cs[i] = f.Type
		}
		return cs
	case KindFunc:
		return append(append([]*Type(nil), t.Args...), t.Results...)
	case KindService:
		cs := make([]*Type, len(t.Methods))
		for i, m := range t.Methods {
			cs[i] = m.Type
		}
		return cs
	}
	return nil
}

// maxTypeString bounds Type.String.
const maxTypeString = 512

func (p *typePrinter) print(t *Type) {
	if p.b.Len() > maxTypeString {
		if !p.cut {
			p.b.WriteString(" …")
			p.cut = true
		}
		return
	}
	t = t.Resolved()
	if t == nil {
		p.b.WriteString("<nil>")
		return
	}
	if t.Kind.IsPrimitive() || t.Kind == kindPlaceholder {
		p.b.WriteString(t.Kind.String())
		return
	}
	if t.Kind == KindFuture {
		fmt.Fprintf(p.b, "<future type %d>", t.Opcode)
		return
	}
	if p.rec[t] {
		if p.open[t] {
			fmt.Fprintf(p.b, "μ%d", p.ids[t])
			return
		}
		fmt.Fprintf(p.b, "μ%d.", p.ids[t])
	}
	p.open[t] = true
	defer func() { p.open[t] = false }()
	switch t.Kind {
	case KindOpt, KindVec:
		p.b.WriteString(t.Kind.String() + " ")
		p.print(t.Elem)
	case KindRecord, KindVariant:
		p.b.WriteString(t.Kind.String() + " {")
		for i, f := range t.Fields {
			if i > 0 {
				p.b.WriteString(";")
			}
			p.b.WriteString(" ")
			if f.Name != "" {
				p.b.WriteString(quoteName(f.Name))
			} else {
				fmt.Fprintf(p.b, "%d", f.ID)
			}
			p.b.WriteString(" : ")
			p.print(f.Type)
		}
		p.b.WriteString(" }")
	case KindFunc:
		p.b.WriteString("func ")
		p.printSig(t)
	case KindService:
		p.b.WriteString("service {")
		for i, m := range t.Methods {
			if i > 0 {
				p.b.WriteString(";")
			}
			p.b.WriteString(" " + quoteName(m.Name) + " : ")
			if mt := m.Type.Resolved(); mt != nil && mt.Kind == KindFunc && !p.rec[mt] {
				p.printSig(mt)
			} else {
				p.print(m.Type)
			}
		}
		p.b.WriteString(" }")
	}
}

func (p *typePrinter) printSig(t *Type) {
	p.printTuple(t.Args)
	p.b.WriteString(" -> ")
	p.printTuple(t.Results)
	for _, m := range t.Modes {
		p.b.WriteString(" " + m.String())
	}
}

func (p *typePrinter) printTuple(ts []*Type) {
	p.b.WriteString("(")
	for i, a := range ts {
		if i > 0 {
			p.b.WriteString(", ")
		}
		p.print(a)
	}
	p.b.WriteString(")")
}

// quoteName writes an identifier as is and anything else as a quoted string.
func quoteName(s string) string {
	ok := s != ""
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	return fmt.Sprintf("%q", s)
}
