package idl

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/principal"
)

// FormatValues writes values as Candid text arguments, `(v1, v2)`, the form
// ParseValues reads back: principals in their textual form, record and
// variant labels by name where the value knows it (else by number), text and
// blobs with Candid escapes. Reading the result at the values' types gives
// equal values, except for non-finite floats, which Candid text cannot
// write (they appear as nan, inf and -inf).
func FormatValues(values []candid.Value) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, v := range values {
		if i > 0 {
			b.WriteString(", ")
		}
		formatValue(&b, v)
	}
	b.WriteByte(')')
	return b.String()
}

// FormatValue writes one value in Candid text syntax (see FormatValues).
func FormatValue(v candid.Value) string {
	var b strings.Builder
	formatValue(&b, v)
	return b.String()
}

func formatValue(b *strings.Builder, v candid.Value) {
	switch v.Kind {
	case candid.KindNull, candid.KindReserved:
		b.WriteString("null")
	case candid.KindBool:
		b.WriteString(strconv.FormatBool(v.Bool))
	case candid.KindNat, candid.KindInt:
		if v.Big == nil {
			b.WriteString("0")
		} else {
			b.WriteString(v.Big.String())
		}
	case candid.KindNat8, candid.KindNat16, candid.KindNat32, candid.KindNat64:
		b.WriteString(strconv.FormatUint(v.Uint, 10))
	case candid.KindInt8, candid.KindInt16, candid.KindInt32, candid.KindInt64:
		b.WriteString(strconv.FormatInt(v.Int, 10))
	case candid.KindFloat32, candid.KindFloat64:
		formatFloat(b, v)
	case candid.KindText:
		quote(b, []byte(v.Text))
	case candid.KindPrincipal, candid.KindService:
		if v.Kind == candid.KindPrincipal {
			b.WriteString("principal ")
		} else {
			b.WriteString("service ")
		}
		quotePrincipal(b, v.Bytes)
	case candid.KindFunc:
		b.WriteString("func ")
		quotePrincipal(b, v.Bytes)
		b.WriteByte('.')
		writeName(b, v.Text)
	case candid.KindOpt:
		if v.Opt == nil {
			b.WriteString("null")
			return
		}
		b.WriteString("opt ")
		formatValue(b, *v.Opt)
	case candid.KindVec:
		if v.Bytes != nil {
			b.WriteString("blob ")
			quote(b, v.Bytes)
			return
		}
		b.WriteString("vec {")
		for i, e := range v.Elems {
			if i > 0 {
				b.WriteByte(';')
			}
			b.WriteByte(' ')
			formatValue(b, e)
		}
		closeBraces(b, len(v.Elems))
	case candid.KindRecord, candid.KindVariant:
		b.WriteString(v.Kind.String())
		b.WriteString(" {")
		for i, f := range v.Fields {
			if i > 0 {
				b.WriteByte(';')
			}
			b.WriteByte(' ')
			if f.Name != "" {
				writeName(b, f.Name)
			} else {
				b.WriteString(strconv.FormatUint(uint64(f.ID), 10))
			}
			b.WriteString(" = ")
			formatValue(b, f.Value)
		}
		closeBraces(b, len(v.Fields))
	default:
		fmt.Fprintf(b, "<%s>", v.Kind)
	}
}

func closeBraces(b *strings.Builder, n int) {
	if n == 0 {
		b.WriteString("}")
		return
	}
	b.WriteString(" }")
}

func formatFloat(b *strings.Builder, v candid.Value) {
	f := v.Float
	switch {
	case math.IsNaN(f):
		b.WriteString("nan")
		return
	case math.IsInf(f, 1):
		b.WriteString("inf")
		return
	case math.IsInf(f, -1):
		b.WriteString("-inf")
		return
	}
	bits := 64
	if v.Kind == candid.KindFloat32 {
		bits = 32
	}
	s := strconv.FormatFloat(f, 'g', -1, bits)
	if !strings.ContainsAny(s, ".e") {
		s += "." // 3 reads as an integer in messages; 3. is plainly a float
	}
	b.WriteString(s)
}

func quotePrincipal(b *strings.Builder, raw []byte) {
	p, err := principal.FromBytes(raw)
	if err != nil {
		// Longer than any principal: keep the bytes visible rather than lose them.
		fmt.Fprintf(b, "\"<invalid principal %x>\"", raw)
		return
	}
	b.WriteString(strconv.Quote(p.String()))
}

// writeName writes a label or method name: bare when it is an identifier
// that is not a keyword, quoted otherwise.
func writeName(b *strings.Builder, name string) {
	if isPlainIdent(name) {
		b.WriteString(name)
		return
	}
	quote(b, []byte(name))
}

func isPlainIdent(s string) bool {
	if s == "" || keywords[s] || !isIdentStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIdentStart(s[i]) && !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// quote writes a Candid text literal: printable ASCII and valid UTF-8 as
// is, the usual escapes, and any other byte as \xx.
func quote(b *strings.Builder, s []byte) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for len(s) > 0 {
		c := s[0]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(s)
			if r != utf8.RuneError || size > 1 {
				b.Write(s[:size])
				s = s[size:]
				continue
			}
			fallthrough
		default:
			b.WriteByte('\\')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		}
		s = s[1:]
	}
	b.WriteByte('"')
}
