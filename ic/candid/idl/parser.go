package idl

import (
	"strconv"
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

func uintString(n uint32) string { return strconv.FormatUint(uint64(n), 10) }
