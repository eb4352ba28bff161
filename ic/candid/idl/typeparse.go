package idl

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"alpnib.dev/ic/candid"
)

// The type grammar of .did files: service declarations, function
// signatures, data types and their field lists.

// actor reads service <id>? : (<tuptype> ->)? (<actortype> | <id>).
func (p *parser) actor() (*actorDecl, error) {
	kw := p.take()
	a := &actorDecl{pos: kw.pos}
	if p.peek().kind == tIdent && !keywords[p.peek().text] {
		a.name = p.take().text
	}
	if _, err := p.expect(":"); err != nil {
		return nil, err
	}
	if p.isPunct("(") {
		args, err := p.tupleType()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect("->"); err != nil {
			return nil, err
		}
		a.class, a.args = true, args
	}
	body, err := p.actorBody()
	if err != nil {
		return nil, err
	}
	a.body = body
	return a, nil
}

func (p *parser) actorBody() (typeExpr, error) {
	if p.isPunct("{") {
		return p.actorType(p.peek().pos)
	}
	id, err := p.ident()
	if err != nil {
		return nil, err
	}
	return &namedType{pos: id.pos, name: id.text}, nil
}

// actorType reads { <methtype>;* }.
func (p *parser) actorType(pos Pos) (*serviceType, error) {
	if _, err := p.expect("{"); err != nil {
		return nil, err
	}
	s := &serviceType{pos: pos}
	for !p.isPunct("}") {
		nt, name, err := p.name()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(":"); err != nil {
			return nil, err
		}
		m := methodType{pos: nt.pos, name: name}
		if p.isPunct("(") {
			m.typ, err = p.funcSig(p.peek().pos)
		} else {
			var id token
			id, err = p.ident()
			m.typ = &namedType{pos: id.pos, name: id.text}
		}
		if err != nil {
			return nil, err
		}
		s.methods = append(s.methods, m)
		if !p.isPunct("}") {
			if _, err := p.expect(";"); err != nil {
				return nil, err
			}
		}
	}
	p.take()
	return s, nil
}

// funcSig reads <tuptype> -> <tuptype> <funcann>*.
func (p *parser) funcSig(pos Pos) (*funcType, error) {
	args, err := p.tupleType()
	if err != nil {
		return nil, err
	}
	if _, err := p.expect("->"); err != nil {
		return nil, err
	}
	results, err := p.tupleType()
	if err != nil {
		return nil, err
	}
	f := &funcType{pos: pos, args: args, results: results}
	for p.isWord("query") || p.isWord("oneway") || p.isWord("composite_query") {
		f.modes = append(f.modes, p.take().text)
	}
	return f, nil
}

// tupleType reads ( <argtype>,* ) where <argtype> ::= (<name> :)? <datatype>.
func (p *parser) tupleType() ([]argType, error) {
	if _, err := p.expect("("); err != nil {
		return nil, err
	}
	args := []argType{}
	for !p.isPunct(")") {
		a := argType{pos: p.peek().pos}
		t, next := p.peek(), p.peekAt(1)
		if (t.kind == tText || (t.kind == tIdent && !keywords[t.text])) && next.kind == tPunct && next.text == ":" {
			_, name, err := p.name()
			if err != nil {
				return nil, err
			}
			p.take()
			a.name = name
		}
		dt, err := p.dataType()
		if err != nil {
			return nil, err
		}
		a.typ = dt
		args = append(args, a)
		if !p.isPunct(")") {
			if _, err := p.expect(","); err != nil {
				return nil, err
			}
		}
	}
	p.take()
	return args, nil
}

// dataType reads <datatype>.
func (p *parser) dataType() (typeExpr, error) {
	t := p.peek()
	if err := p.enter(t.pos); err != nil {
		return nil, err
	}
	defer p.leave()
	if t.kind != tIdent {
		return nil, errorf(t.pos, "expected a type, found %s", t.describe())
	}
	switch {
	case primNames[t.text]:
		p.take()
		return &primType{pos: t.pos, name: t.text}, nil
	case t.text == "blob":
		p.take()
		return &vecType{pos: t.pos, elem: &primType{pos: t.pos, name: "nat8"}}, nil
	case t.text == "opt" || t.text == "vec":
		p.take()
		e, err := p.dataType()
		if err != nil {
			return nil, err
		}
		if t.text == "opt" {
			return &optType{pos: t.pos, elem: e}, nil
		}
		return &vecType{pos: t.pos, elem: e}, nil
	case t.text == "record":
		p.take()
		fs, err := p.fieldTypes(true)
		if err != nil {
			return nil, err
		}
		return &recordType{pos: t.pos, fields: fs}, nil
	case t.text == "variant":
		p.take()
		fs, err := p.fieldTypes(false)
		if err != nil {
			return nil, err
		}
		return &variantType{pos: t.pos, fields: fs}, nil
	case t.text == "func":
		p.take()
		return p.funcSig(t.pos)
	case t.text == "service":
		p.take()
		return p.actorType(t.pos)
	}
	id, err := p.ident()
	if err != nil {
		return nil, err
	}
	return &namedType{pos: id.pos, name: id.text}, nil
}

// fieldTypes reads { <fieldtype>;* } with the shorthands: in a record a bare
// type takes the id after the previous one; in a variant a bare label has
// type null. Duplicate ids (including hash collisions) are errors.
func (p *parser) fieldTypes(record bool) ([]fieldType, error) {
	if _, err := p.expect("{"); err != nil {
		return nil, err
	}
	var fs []fieldType
	next := uint32(0)
	first := true
	for !p.isPunct("}") {
		t := p.peek()
		f := fieldType{pos: t.pos}
		hasLabel := false
		if t.kind == tNum || t.kind == tText || (t.kind == tIdent && !keywords[t.text]) {
			after := p.peekAt(1)
			if after.kind == tPunct && after.text == ":" {
				l, err := p.label()
				if err != nil {
					return nil, err
				}
				p.take()
				f.label, hasLabel = l, true
				if f.typ, err = p.dataType(); err != nil {
					return nil, err
				}
			} else if !record {
				l, err := p.label()
				if err != nil {
					return nil, err
				}
				f.label, hasLabel = l, true
				f.typ = &primType{pos: t.pos, name: "null"}
			}
		}
		if !hasLabel {
			if !record {
				return nil, errorf(t.pos, "a variant field needs a label")
			}
			if !first && next == 0 {
				return nil, errorf(t.pos, "tuple field id overflows 32 bits")
			}
			f.label = label{id: next, num: true}
			dt, err := p.dataType()
			if err != nil {
				return nil, err
			}
			f.typ = dt
		}
		next = f.label.id + 1
		first = false
		fs = append(fs, f)
		if !p.isPunct("}") {
			if _, err := p.expect(";"); err != nil {
				return nil, err
			}
		}
	}
	p.take()
	if err := uniqueLabels(len(fs), func(i int) (label, Pos) { return fs[i].label, fs[i].pos }); err != nil {
		return nil, err
	}
	return fs, nil
}

// label reads a field label: a number, an identifier or a quoted name.
func (p *parser) label() (label, error) {
	t := p.peek()
	switch t.kind {
	case tNum:
		p.take()
		n, err := parseNat32(t.text)
		if err != nil {
			return label{}, errorf(t.pos, "field id %s: %v", t.text, err)
		}
		return label{id: n, num: true}, nil
	case tText:
		_, s, err := p.text()
		if err != nil {
			return label{}, err
		}
		return label{id: candid.FieldHash(s), name: s}, nil
	}
	id, err := p.ident()
	if err != nil {
		return label{}, err
	}
	return label{id: candid.FieldHash(id.text), name: id.text}, nil
}

// parseNat32 reads a decimal or 0x hexadecimal natural below 2^32.
func parseNat32(s string) (uint32, error) {
	n, err := parseNatLiteral(s)
	if err != nil {
		return 0, err
	}
	if n > math.MaxUint32 {
		return 0, fmt.Errorf("larger than 2^32-1")
	}
	return uint32(n), nil
}

func parseNatLiteral(s string) (uint64, error) {
	if strings.ContainsAny(s, "+-.") {
		return 0, fmt.Errorf("not a natural number")
	}
	base := 10
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		s, base = s[2:], 16
	}
	return strconv.ParseUint(strings.ReplaceAll(s, "_", ""), base, 64)
}

// uniqueLabels refuses the second of two fields whose labels hash to the same
// id, naming both, for record and variant types and values alike. at gives
// the label and position of field i of n.
func uniqueLabels(n int, at func(i int) (label, Pos)) error {
	seen := make(map[uint32]label, n)
	for i := 0; i < n; i++ {
		l, pos := at(i)
		if prev, dup := seen[l.id]; dup {
			return errorf(pos, "label '%s' hash collision with '%s'", l, prev)
		}
		seen[l.id] = l
	}
	return nil
}
