package idl

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Pos is a place in a source: file, 1-based line and 1-based column counted
// in characters, so an editor jumps to it.
type Pos struct {
	File string
	Line int
	Col  int
}

func (p Pos) String() string {
	if p.File == "" {
		return fmt.Sprintf("%d:%d", p.Line, p.Col)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Error is a syntax or type error in a Candid source, located at Pos.
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

func errorf(p Pos, format string, args ...any) *Error {
	return &Error{Pos: p, Msg: fmt.Sprintf(format, args...)}
}

type tokKind int

const (
	tEOF   tokKind = iota
	tIdent         // identifiers and keywords alike; the parser tells them apart
	tText          // "…" with escapes decoded into bytes
	tNum           // numbers as written (sign, underscores, hex, fraction, exponent)
	tPunct         // ( ) { } ; : , = . -> !: == !=
)

type token struct {
	kind  tokKind
	pos   Pos
	text  string // identifier, punctuation or the number as written
	bytes []byte // decoded content of a text literal
}

func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of input"
	case tText:
		return "text literal"
	case tNum:
		return "number " + t.text
	default:
		return strconv.Quote(t.text)
	}
}

// lexer turns a source into tokens. It keeps the whole input in memory: .did
// files are small and a slice is the fastest way to look ahead.
type lexer struct {
	src  string
	off  int
	line int
	col  int
	file string
}

func newLexer(file, src string) *lexer {
	l := &lexer{src: src, line: 1, col: 1, file: file}
	if strings.HasPrefix(src, "\ufeff") {
		l.off = len("\ufeff") // a byte-order mark some editors write; not content
	}
	return l
}

func (l *lexer) pos() Pos { return Pos{File: l.file, Line: l.line, Col: l.col} }

// advance moves over n bytes, keeping line and column.
func (l *lexer) advance(n int) {
	for i := 0; i < n && l.off < len(l.src); {
		r, size := utf8.DecodeRuneInString(l.src[l.off:])
		l.off += size
		i += size
		if r == '\n' {
			l.line++
			l.col = 1
		} else {
			l.col++
		}
	}
}

func (l *lexer) peekByte(k int) byte {
	if l.off+k < len(l.src) {
		return l.src[l.off+k]
	}
	return 0
}

// skipSpace skips white space, line comments and nested block comments.
func (l *lexer) skipSpace() error {
	for l.off < len(l.src) {
		c := l.src[l.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			l.advance(1)
		case c == '/' && l.peekByte(1) == '/':
			for l.off < len(l.src) && l.src[l.off] != '\n' {
				l.advance(1)
			}
		case c == '/' && l.peekByte(1) == '*':
			start := l.pos()
			l.advance(2)
			depth := 1
			for depth > 0 {
				if l.off >= len(l.src) {
					return errorf(start, "unclosed comment")
				}
				switch {
				case l.src[l.off] == '/' && l.peekByte(1) == '*':
					depth++
					l.advance(2)
				case l.src[l.off] == '*' && l.peekByte(1) == '/':
					depth--
					l.advance(2)
				default:
					l.advance(1)
				}
			}
		default:
			return nil
		}
	}
	return nil
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// next returns the next token.
func (l *lexer) next() (token, error) {
	if err := l.skipSpace(); err != nil {
		return token{}, err
	}
	p := l.pos()
	if l.off >= len(l.src) {
		return token{kind: tEOF, pos: p}, nil
	}
	c := l.src[l.off]
	switch {
	case isIdentStart(c):
		end := l.off + 1
		for end < len(l.src) && (isIdentStart(l.src[end]) || isDigit(l.src[end])) {
			end++
		}
		s := l.src[l.off:end]
		l.advance(end - l.off)
		return token{kind: tIdent, pos: p, text: s}, nil
	case isDigit(c) || ((c == '-' || c == '+') && isDigit(l.peekByte(1))):
		return l.number(p)
	case c == '"':
		b, err := l.textLit(p)
		if err != nil {
			return token{}, err
		}
		return token{kind: tText, pos: p, bytes: b}, nil
	}
	two := ""
	if l.off+1 < len(l.src) {
		two = l.src[l.off : l.off+2]
	}
	switch two {
	case "->", "!:", "==", "!=":
		l.advance(2)
		return token{kind: tPunct, pos: p, text: two}, nil
	}
	switch c {
	case '(', ')', '{', '}', ';', ':', ',', '=', '.':
		l.advance(1)
		return token{kind: tPunct, pos: p, text: string(c)}, nil
	}
	r, _ := utf8.DecodeRuneInString(l.src[l.off:])
	return token{}, errorf(p, "unexpected character %q", r)
}

// number scans a numeric literal as written; the parser interprets it once it
// knows the type it stands for.
func (l *lexer) number(p Pos) (token, error) {
	s := l.src
	i := l.off
	if s[i] == '-' || s[i] == '+' {
		i++
	}
	digits := isDigit
	expChars := "eE"
	if s[i] == '0' && i+1 < len(s) && (s[i+1] == 'x' || s[i+1] == 'X') {
		i += 2
		digits = isHex
		expChars = "pP"
		if i >= len(s) || !isHex(s[i]) {
			return token{}, errorf(p, "hexadecimal number without digits")
		}
	}
	// Underscores may follow any digit, as in the reference lexer (2_ is 2).
	run := func() {
		for i < len(s) && (digits(s[i]) || s[i] == '_') {
			i++
		}
	}
	run()
	if i < len(s) && s[i] == '.' {
		i++
		run()
	}
	if i < len(s) && strings.IndexByte(expChars, s[i]) >= 0 {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			i = j
			for i < len(s) && (isDigit(s[i]) || (s[i] == '_' && i+1 < len(s) && isDigit(s[i+1]))) {
				i++
			}
		}
	}
	text := s[l.off:i]
	l.advance(i - l.off)
	return token{kind: tNum, pos: p, text: text}, nil
}

// textLit decodes a quoted literal. Its bytes are kept as bytes: a `blob "…"`
// may hold any byte through \xx escapes, while a text or a name must be UTF-8,
// which the parser checks where it matters.
func (l *lexer) textLit(p Pos) ([]byte, error) {
	l.advance(1) // opening quote
	var out []byte
	for {
		if l.off >= len(l.src) {
			return nil, errorf(p, "unclosed text literal")
		}
		c := l.src[l.off]
		switch c {
		case '"':
			l.advance(1)
			return out, nil
		case '\\':
			ep := l.pos()
			e := l.peekByte(1)
			switch e {
			case 'n':
				out = append(out, '\n')
				l.advance(2)
			case 'r':
				out = append(out, '\r')
				l.advance(2)
			case 't':
				out = append(out, '\t')
				l.advance(2)
			case '\\', '"', '\'':
				out = append(out, e)
				l.advance(2)
			case 'u':
				if l.peekByte(2) != '{' {
					return nil, errorf(ep, "\\u must be followed by {hex digits}")
				}
				end := 3
				for l.off+end < len(l.src) && (isHex(l.src[l.off+end]) || l.src[l.off+end] == '_') {
					end++
				}
				if l.off+end >= len(l.src) || l.src[l.off+end] != '}' {
					return nil, errorf(ep, "unclosed unicode escape: \\u{ needs hex digits and }")
				}
				hex := l.src[l.off+3 : l.off+end]
				cp, err := parseHexDigits(hex)
				if err != nil || cp > utf8.MaxRune {
					return nil, errorf(ep, "unicode escape out of range %s", hex)
				}
				if cp >= 0xD800 && cp <= 0xDFFF {
					return nil, errorf(ep, "unicode escape out of range %X: a surrogate is not a character", cp)
				}
				out = utf8.AppendRune(out, rune(cp))
				l.advance(end + 1)
			default:
				if isHex(e) && isHex(l.peekByte(2)) {
					v, _ := strconv.ParseUint(l.src[l.off+1:l.off+3], 16, 8)
					out = append(out, byte(v))
					l.advance(3)
					continue
				}
				return nil, errorf(ep, "unknown escape sequence")
			}
		default:
			r, size := utf8.DecodeRuneInString(l.src[l.off:])
			if r == utf8.RuneError && size == 1 {
				return nil, errorf(l.pos(), "invalid UTF-8 in text literal")
			}
			out = append(out, l.src[l.off:l.off+size]...)
			l.advance(size)
		}
	}
}

// parseHexDigits reads hex digits with optional _ separators between them.
func parseHexDigits(s string) (uint64, error) {
	if s == "" || s[0] == '_' || s[len(s)-1] == '_' || strings.Contains(s, "__") {
		return 0, fmt.Errorf("bad hex digits %q", s)
	}
	s = strings.ReplaceAll(s, "_", "")
	if len(s) > 8 {
		return 0, fmt.Errorf("too many hex digits")
	}
	return strconv.ParseUint(s, 16, 32)
}
