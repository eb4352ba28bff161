package main

import (
	"io"
	"strings"
	"unicode/utf8"

	"alpnib.dev/internal/term"
)

// cell is one cell of a table: its text, the colour it is painted in
// (term.None for none), and an unpainted rest shown after it.
type cell struct {
	text  string
	color term.Color
	rest  string
}

func (c cell) width() int { return utf8.RuneCountInString(c.text) + utf8.RuneCountInString(c.rest) }

func plain(s string) cell { return cell{text: s} }

// writeTable writes rows as columns two spaces apart, each as wide as its
// widest text, and paints a cell only after its width is counted, so a
// coloured column lines up with the header above it. (text/tabwriter counts
// the colour's escape bytes as width, which shifted every column after a
// painted one on a terminal.) The last column is not padded.
func writeTable(w io.Writer, paint term.Painter, rows [][]cell) error {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], c.width())
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			b.WriteString(paint.Paint(c.color, c.text) + c.rest)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-c.width()+2))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
