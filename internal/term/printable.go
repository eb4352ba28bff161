package term

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Hidden reports whether r does not print as itself on a terminal:
// control characters (Cc, NUL and ESC among them), format characters (Cf:
// bidi overrides and isolates such as U+202E, zero-width spaces and
// joiners, the BOM), line and paragraph separators, and the replacement
// character invalid UTF-8 decodes to. Any of them in a name can make two
// different names look alike, or rewrite the rest of a line.
func Hidden(r rune) bool {
	return r == utf8.RuneError || unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// Printable renders s for a person to read: each hidden rune and each byte
// of invalid UTF-8 is written as a Go escape (\x1b, \u202e); everything
// else is itself. A string with none of them is returned as it is.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if Hidden(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b []byte
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b = fmt.Appendf(b, `\x%02x`, s[i])
		case Hidden(r) && r < 0x80:
			b = fmt.Appendf(b, `\x%02x`, r)
		case Hidden(r) && r < 0x10000:
			b = fmt.Appendf(b, `\u%04x`, r)
		case Hidden(r):
			b = fmt.Appendf(b, `\U%08x`, r)
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return string(b)
}

// palette is every sequence a Painter writes.
var palette = []string{string(Red), string(Green), string(Yellow), string(Blue), string(Dim), string(Bold), reset}

// Sanitize is Printable for text a program rendered: line breaks and tabs
// stay, and so, when colour is true, do the exact colour sequences a
// Painter writes; every other hidden rune is escaped. Text that reached the
// output from elsewhere (a name, a registry record, a dashboard reply) can
// then neither hide itself nor move the cursor or rewrite the line, and
// with colour off it cannot colour anything either.
func Sanitize(s string, colour bool) string {
	var b []byte
	clean := 0 // s[clean:i] is yet to be copied
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == '\n' || r == '\t' || (!Hidden(r) && !(r == utf8.RuneError && n <= 1)) {
			i += n
			continue
		}
		if r == 0x1b && colour {
			if seq := paletteAt(s[i:]); seq != "" {
				i += len(seq)
				continue
			}
		}
		b = append(b, s[clean:i]...)
		b = append(b, Printable(s[i:i+n])...)
		i += n
		clean = i
	}
	if b == nil {
		return s
	}
	return string(append(b, s[clean:]...))
}

func paletteAt(s string) string {
	for _, seq := range palette {
		if len(s) >= len(seq) && s[:len(seq)] == seq {
			return seq
		}
	}
	return ""
}
