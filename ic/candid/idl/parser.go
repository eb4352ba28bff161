package idl

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// keywords cannot be used as bare identifiers; a name that coincides with one
// must be quoted ("query": …), as the Candid grammar says.
var keywords = map[string]bool{
	"type": true, "import": true, "service": true, "func": true, "opt": true,
	"vec": true, "record": true, "variant": true, "blob": true, "principal": true,
	"query": true, "oneway": true, "composite_query": true,
	"nat": true, "nat8": true, "nat16": true, "nat32": true, "nat64": true,
	"int": true, "int8": true, "int16": true, "int32": true, "int64": true,
	"float32": true, "float64": true, "bool": true, "text": true, "null": true,
	"reserved": true, "empty": true, "true": true, "false": true,
}

var primNames = map[string]bool{
	"nat": true, "nat8": true, "nat16": true, "nat32": true, "nat64": true,
	"int": true, "int8": true, "int16": true, "int32": true, "int64": true,
	"float32": true, "float64": true, "bool": true, "text": true, "null": true,
	"reserved": true, "empty": true, "principal": true,
}

// maxDepth bounds nesting so hostile input fails with an error instead of
// exhausting the stack.
const maxDepth = 500

// parser reads tokens lazily with up to two tokens of look-ahead, so memory
// stays proportional to nesting, not to the size of the input.
type parser struct {
	lx    *lexer
	buf   [2]token
	n     int // tokens in buf
	depth int
}

// lexFailure carries a lexical error out of the look-ahead buffer, which has
// no error result; the entry points recover it (see catch) and return it.
type lexFailure struct{ err error }

func newParser(file, src string) *parser {
	return &parser{lx: newLexer(file, src)}
}

// catch turns a lexical error raised while parsing into the returned error.
// Any other panic is a bug and continues.
func catch(err *error) {
	if r := recover(); r != nil {
		lf, ok := r.(lexFailure)
		if !ok {
			panic(r)
		}
		*err = lf.err
	}
}

func (p *parser) fill(k int) {
	for p.n <= k {
		t, err := p.lx.next()
		if err != nil {
			panic(lexFailure{err})
		}
		p.buf[p.n] = t
		p.n++
	}
}

func (p *parser) peek() token {
	p.fill(0)
	return p.buf[0]
}

func (p *parser) peekAt(k int) token {
	if p.peek().kind == tEOF {
		return p.buf[0]
	}
	p.fill(k)
	return p.buf[k]
}

func (p *parser) take() token {
	t := p.peek()
	if t.kind != tEOF {
		p.buf[0] = p.buf[1]
		p.n--
	}
	return t
}

func (p *parser) isPunct(s string) bool {
	t := p.peek()
	return t.kind == tPunct && t.text == s
}

func (p *parser) isWord(s string) bool {
	t := p.peek()
	return t.kind == tIdent && t.text == s
}

func (p *parser) expect(s string) (token, error) {
	t := p.peek()
	if (t.kind == tPunct || t.kind == tIdent) && t.text == s {
		return p.take(), nil
	}
	return t, errorf(t.pos, "expected %q, found %s", s, t.describe())
}

func (p *parser) enter(pos Pos) error {
	p.depth++
	if p.depth > maxDepth {
		return errorf(pos, "nesting deeper than %d", maxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// ident reads an identifier that is not a keyword.
func (p *parser) ident() (token, error) {
	t := p.peek()
	if t.kind != tIdent {
		return t, errorf(t.pos, "expected an identifier, found %s", t.describe())
	}
	if keywords[t.text] {
		return t, errorf(t.pos, "%q is a keyword; quote it to use it as a name", t.text)
	}
	return p.take(), nil
}

// text reads a text literal that must be UTF-8 (a name, a path, a principal).
func (p *parser) text() (token, string, error) {
	t := p.peek()
	if t.kind != tText {
		return t, "", errorf(t.pos, "expected a text literal, found %s", t.describe())
	}
	if !utf8.Valid(t.bytes) {
		return t, "", errorf(t.pos, "text is not valid UTF-8")
	}
	p.take()
	return t, string(t.bytes), nil
}

// name reads <name> ::= <id> | <text>.
func (p *parser) name() (token, string, error) {
	if p.peek().kind == tText {
		return p.text()
	}
	t, err := p.ident()
	return t, t.text, err
}

// parseProgram reads <def>;* <actor>;? and, in a test file, <test>;*.
func (p *parser) parseProgram(file string, tests bool) (*fileAST, error) {
	f := &fileAST{file: file}
	for {
		switch {
		case p.isWord("type"):
			d, err := p.typeDef()
			if err != nil {
				return nil, err
			}
			f.defs = append(f.defs, d)
		case p.isWord("import"):
			d, err := p.importDecl()
			if err != nil {
				return nil, err
			}
			f.imports = append(f.imports, d)
		default:
			goto rest
		}
		// Definitions are separated by semicolons; the last one before the
		// service (or the end) may go without.
		if p.peek().kind == tEOF {
			return f, nil
		}
		if p.isWord("service") && !tests {
			break
		}
		if _, err := p.expect(";"); err != nil {
			return nil, err
		}
	}
rest:
	if p.isWord("service") && !tests {
		a, err := p.actor()
		if err != nil {
			return nil, err
		}
		f.actor = a
		if p.isPunct(";") {
			p.take()
		}
	}
	for tests && p.isWord("assert") {
		t, err := p.test()
		if err != nil {
			return nil, err
		}
		f.tests = append(f.tests, t)
		if p.peek().kind == tEOF {
			break
		}
		if _, err := p.expect(";"); err != nil {
			return nil, err
		}
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, errorf(t.pos, "unexpected %s", t.describe())
	}
	return f, nil
}

func (p *parser) typeDef() (typeDef, error) {
	kw := p.take()
	id, err := p.ident()
	if err != nil {
		return typeDef{}, err
	}
	if _, err := p.expect("="); err != nil {
		return typeDef{}, err
	}
	t, err := p.dataType()
	if err != nil {
		return typeDef{}, err
	}
	return typeDef{pos: kw.pos, name: id.text, typ: t}, nil
}

func (p *parser) importDecl() (importDecl, error) {
	kw := p.take()
	d := importDecl{pos: kw.pos}
	if p.isWord("service") {
		p.take()
		d.service = true
	}
	_, path, err := p.text()
	if err != nil {
		return d, err
	}
	d.path = path
	return d, nil
}

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
	seen := make(map[uint32]label, len(fs))
	for _, f := range fs {
		if prev, dup := seen[f.label.id]; dup {
			return nil, errorf(f.pos, "label '%s' hash collision with '%s'", f.label, prev)
		}
		seen[f.label.id] = f.label
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
		return label{id: Hash(s), name: s}, nil
	}
	id, err := p.ident()
	if err != nil {
		return label{}, err
	}
	return label{id: Hash(id.text), name: id.text}, nil
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

// Hash is the Candid field-name hash: the UTF-8 bytes folded as
// h = h*223 + b modulo 2^32.
func Hash(name string) uint32 {
	var h uint32
	for i := 0; i < len(name); i++ {
		h = h*223 + uint32(name[i])
	}
	return h
}

func uintString(n uint32) string { return strconv.FormatUint(uint64(n), 10) }
