package main

import (
	"bytes"
	"io"

	"alpnib.dev/internal/term"
)

// renderSafe renders a report for a person into a buffer, painted as w
// allows, and writes it to w with every hidden character escaped
// (term.Sanitize). What alp prints comes in part from the registry,
// governance, the dashboard and state.json; a name there holding a bidi
// override, a zero-width character or an escape sequence shows as what it
// is instead of rewriting the line. The JSON forms need no such care.
func renderSafe(w io.Writer, render func(io.Writer, term.Painter) error) error {
	paint := term.For(w)
	var buf bytes.Buffer
	err := render(&buf, paint)
	if _, werr := io.WriteString(w, term.Sanitize(buf.String(), paint.Enabled())); err == nil {
		err = werr
	}
	return err
}

// printSafe writes one line of text that may hold names from elsewhere.
func printSafe(w io.Writer, line string) {
	io.WriteString(w, term.Sanitize(line, false)+"\n")
}
