package config

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"alpnib.dev/internal/term"
)

// DefaultMaxFileBytes is the largest configuration file alp reads: 16 MiB.
// A large fleet's resources are a few hundred KiB (10,000 nodes at ~150
// bytes each is 1.5 MiB), so 16 MiB leaves a tenfold margin while bounding
// what a mistaken path (a disk image, a log) costs: the parser holds the
// file and its syntax tree, several times its size.
const DefaultMaxFileBytes = 16 << 20

// MaxNesting is how deeply blocks, brackets, parentheses, strings and
// template interpolations may nest. The HCL parser recurses once or more per
// level, so a file nested a million deep overflows Go's stack, which no
// recover catches; real configurations nest fewer than ten.
const MaxNesting = 256

// Limits bound what a load reads. The zero value means the defaults.
type Limits struct {
	// MaxFileBytes is the largest file read; 0 means DefaultMaxFileBytes.
	MaxFileBytes int64
}

func (l Limits) maxFileBytes() int64 {
	if l.MaxFileBytes > 0 {
		return l.MaxFileBytes
	}
	return DefaultMaxFileBytes
}

// ParseFile reads and parses one HCL file after the checks that keep a
// hostile file from exhausting alp: its size, its encoding (UTF-8, checked
// once instead of one diagnostic per bad byte) and its nesting depth. Every
// problem is a diagnostic naming the file (and line, where there is one).
func ParseFile(path string, lim Limits) (*hcl.File, hcl.Diagnostics) {
	src, diags := readSource(path, lim.maxFileBytes())
	if diags.HasErrors() {
		return nil, diags
	}
	if diags := checkEncoding(path, src); diags.HasErrors() {
		return nil, diags
	}
	if diags := checkNesting(path, src, MaxNesting); diags.HasErrors() {
		return nil, diags
	}
	f, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() || f == nil {
		return f, diags
	}
	if body, ok := f.Body.(*hclsyntax.Body); ok {
		diags = append(diags, checkNames(body)...)
	}
	return f, diags
}

func fileDiag(path, summary, detail string) hcl.Diagnostics {
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary, Detail: detail,
		Subject: &hcl.Range{Filename: path, Start: hcl.InitialPos, End: hcl.InitialPos}}}
}

// readSource reads at most max bytes of path, refusing a longer file
// without reading the rest.
func readSource(path string, max int64) ([]byte, hcl.Diagnostics) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileDiag(path, "Failed to read file", err.Error())
	}
	defer f.Close()
	var buf bytes.Buffer
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		buf.Grow(int(min(st.Size(), max) + 1)) // one allocation, not ReadAll's doublings
	}
	_, err = buf.ReadFrom(io.LimitReader(f, max+1))
	src := buf.Bytes()
	if err != nil {
		return nil, fileDiag(path, "Failed to read file", err.Error())
	}
	if int64(len(src)) > max {
		size := "more than " + fmt.Sprint(max) + " bytes"
		if st, err := f.Stat(); err == nil {
			size = fmt.Sprint(st.Size()) + " bytes"
		}
		return nil, fileDiag(path, "File too large",
			fmt.Sprintf("%s is %s; alp reads configuration files of at most %d bytes (--max-config-bytes)", path, size, max))
	}
	return src, nil
}

// checkEncoding refuses a file that is not UTF-8 at its first bad byte.
func checkEncoding(path string, src []byte) hcl.Diagnostics {
	if utf8.Valid(src) {
		return nil
	}
	pos := hcl.InitialPos
	for len(src) > 0 {
		r, n := utf8.DecodeRune(src)
		if r == utf8.RuneError && n <= 1 {
			break
		}
		pos = advance(pos, r, n)
		src = src[n:]
	}
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid character encoding",
		Detail:  "the file is not UTF-8 text; this is its first byte that is not",
		Subject: &hcl.Range{Filename: path, Start: pos, End: pos}}}
}

func advance(p hcl.Pos, r rune, n int) hcl.Pos {
	p.Byte += n
	if r == '\n' {
		p.Line++
		p.Column = 1
	} else {
		p.Column++
	}
	return p
}

// checkNesting scans src as the HCL lexer would, just enough to count
// nesting: brackets, braces and parentheses in expressions, quoted strings
// and heredocs, the ${ } and %{ } templates inside them, runs of the
// unary operators ! and -, and chains of full splats [*] (the parser
// recurses once per operator and per splat, so "x = !!!…!true" and
// "a[*][*]…" nest as deep as they are long); comments are skipped. It refuses the file at the first place deeper than max. It
// never recurses, so it runs in constant stack on any input.
func checkNesting(path string, src []byte, max int) hcl.Diagnostics {
	type frame struct {
		kind   byte   // '{', '[', '(' code; '"' string; '<' heredoc; '$' template
		marker []byte // a heredoc's closing identifier
	}
	var stack []frame
	top := func() byte {
		if len(stack) == 0 {
			return 0
		}
		return stack[len(stack)-1].kind
	}
	// push opens a frame and reports whether that is one too deep.
	push := func(f frame) bool {
		stack = append(stack, f)
		return len(stack) > max
	}
	pos := hcl.InitialPos
	atLineStart := true
	unary := 0  // the run of ! and - just before, in an expression
	splats := 0 // the [*] in the traversal being read
	for i := 0; i < len(src); {
		c, n := src[i], 1
		at := pos
		deeper := false
		switch top() {
		case '"', '<':
			switch {
			case top() == '<' && atLineStart && heredocEnds(src[i:], stack[len(stack)-1].marker):
				stack = stack[:len(stack)-1]
			case c == '\\' && top() == '"' && i+1 < len(src):
				n = 2 // an escape: the next byte is literal
			case (c == '$' || c == '%') && i+1 < len(src) && src[i+1] == c:
				n = 2 // $${ and %%{ are literal
			case (c == '$' || c == '%') && i+1 < len(src) && src[i+1] == '{':
				n = 2
				deeper = push(frame{kind: '$'})
			case c == '"' && top() == '"', c == '\n' && top() == '"':
				stack = stack[:len(stack)-1]
			}
		default:
			if c != '!' && c != '-' && c != ' ' && c != '\t' && c != '\r' && c != '\n' {
				unary = 0
			}
			if c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ',' || c == '=' || c == '(' || c == ')' || c == '{' || c == '}' || c == ':' || c == '?' {
				splats = 0
			}
			switch {
			case c == '!' || c == '-':
				unary++
				deeper = len(stack)+unary > max
			case c == '[' && splatAt(src[i:]) > 0:
				n = splatAt(src[i:])
				splats++
				deeper = len(stack)+splats > max
			case c == '#' || (c == '/' && i+1 < len(src) && src[i+1] == '/'):
				for n < len(src)-i && src[i+n] != '\n' {
					n++
				}
			case c == '/' && i+1 < len(src) && src[i+1] == '*':
				n = 2
				for i+n < len(src) && !(src[i+n] == '*' && i+n+1 < len(src) && src[i+n+1] == '/') {
					n++
				}
				if i+n < len(src) {
					n += 2
				}
			case c == '{' || c == '[' || c == '(':
				deeper = push(frame{kind: c})
			case c == '}' || c == ']' || c == ')':
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
			case c == '"':
				deeper = push(frame{kind: '"'})
			case c == '<' && i+1 < len(src) && src[i+1] == '<':
				if marker, skip := heredocStart(src[i+2:]); marker != nil {
					n = 2 + skip
					deeper = push(frame{kind: '<', marker: marker})
				}
			}
		}
		if deeper {
			return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Nesting too deep",
				Detail:  fmt.Sprintf("blocks, brackets, strings, templates, unary operators and splats nest more than %d deep here; alp refuses the file rather than recurse that far", max),
				Subject: &hcl.Range{Filename: path, Start: at, End: at}}}
		}
		// Advance over the n bytes taken, keeping line and column.
		for end := i + n; i < end && i < len(src); {
			r, m := rune(src[i]), 1
			if src[i] >= utf8.RuneSelf {
				r, m = utf8.DecodeRune(src[i:])
			}
			pos = advance(pos, r, m)
			atLineStart = r == '\n'
			i += m
		}
	}
	return nil
}

// splatAt is the length of the full splat "[*]" (spaces allowed inside)
// that src starts with, or 0.
func splatAt(src []byte) int {
	i := 1
	for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
		i++
	}
	if i >= len(src) || src[i] != '*' {
		return 0
	}
	i++
	for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
		i++
	}
	if i >= len(src) || src[i] != ']' {
		return 0
	}
	return i + 1
}

// heredocStart reads "-?IDENT\n" after "<<"; it returns the identifier and
// how many bytes it took, or nil when src does not start a heredoc.
func heredocStart(src []byte) (marker []byte, n int) {
	if n < len(src) && src[n] == '-' {
		n++
	}
	start := n
	for n < len(src) && (src[n] == '_' || src[n] == '-' || src[n] >= '0' && src[n] <= '9' || src[n]|0x20 >= 'a' && src[n]|0x20 <= 'z') {
		n++
	}
	if n == start {
		return nil, 0
	}
	marker = src[start:n]
	if n < len(src) && src[n] == '\r' {
		n++
	}
	if n >= len(src) || src[n] != '\n' {
		return nil, 0
	}
	return marker, n + 1
}

// heredocEnds reports whether the line src starts is a heredoc's closing
// marker (leading spaces allowed, as for <<-).
func heredocEnds(src, marker []byte) bool {
	i := 0
	for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
		i++
	}
	if len(src)-i < len(marker) || string(src[i:i+len(marker)]) != string(marker) {
		return false
	}
	i += len(marker)
	return i == len(src) || src[i] == '\n' || src[i] == '\r'
}

// checkNames refuses block labels, and id attributes written as literal
// strings, that hold a character a reader cannot see or that changes how
// the rest of the line reads: control characters (NUL among them), bidi
// overrides and isolates (U+202E...), zero-width characters and other
// format characters, and line or paragraph separators. A name like that
// can make two different blocks look the same in a review or a terminal.
func checkNames(body *hclsyntax.Body) hcl.Diagnostics {
	var diags hcl.Diagnostics
	// Depth is bounded by checkNesting.
	var walk func(*hclsyntax.Body)
	walk = func(b *hclsyntax.Body) {
		for name, a := range b.Attributes {
			if !isIDAttribute(name) {
				continue
			}
			for _, e := range literalStrings(a.Expr) {
				if bad, ok := invisible(e.value); ok {
					diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid character in id",
						Detail: fmt.Sprintf("%s holds %s; ids must be visible text", name, describeRune(bad)), Subject: &e.at})
				}
			}
		}
		for _, blk := range b.Blocks {
			for i, l := range blk.Labels {
				if bad, ok := invisible(l); ok {
					r := blk.LabelRanges[i]
					diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid character in block label",
						Detail: fmt.Sprintf("the %s label %s holds %s; names must be visible text", blk.Type, term.Printable(l), describeRune(bad)), Subject: &r})
				}
			}
			walk(blk.Body)
		}
	}
	walk(body)
	return diags
}

// isIDAttribute is an attribute that holds ids: id, subnet_id,
// node_provider_id, ..., and lists of them (node_ids, admins, operators,
// nodes).
func isIDAttribute(name string) bool {
	switch name {
	case "id", "admins", "operators", "nodes", "add", "remove":
		return true
	}
	return strings.HasSuffix(name, "_id") || strings.HasSuffix(name, "_ids")
}

type literal struct {
	value string
	at    hcl.Range
}

// literalStrings are the strings written as literals in e: e itself, or
// the elements of a list written out. References (node.a.id) are skipped:
// what they name is checked where it is declared.
func literalStrings(e hclsyntax.Expression) []literal {
	switch e := e.(type) {
	case *hclsyntax.TupleConsExpr:
		var out []literal
		for _, item := range e.Exprs {
			out = append(out, literalStrings(item)...)
		}
		return out
	case *hclsyntax.TemplateExpr, *hclsyntax.LiteralValueExpr:
		if len(e.Variables()) > 0 {
			return nil
		}
		v, d := e.Value(nil)
		if d.HasErrors() || !v.IsKnown() || v.IsNull() || !v.Type().Equals(cty.String) {
			return nil
		}
		return []literal{{value: v.AsString(), at: e.Range()}}
	}
	return nil
}

// invisible returns the first rune of s that checkNames refuses.
func invisible(s string) (rune, bool) {
	for _, r := range s {
		if term.Hidden(r) {
			return r, true
		}
	}
	return 0, false
}

func describeRune(r rune) string {
	if r == 0 {
		return "a NUL (U+0000)"
	}
	return fmt.Sprintf("the invisible character U+%04X", r)
}
