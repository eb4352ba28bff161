package term

import (
	"io"
	"strings"
	"unicode/utf8"
)

// Cell is one cell of a table: its text, the colour it is painted in
// (None for none), and an unpainted rest shown after it.
type Cell struct {
	Text  string
	Color Color
	Rest  string
}

// PlainCell is a cell of text alone.
func PlainCell(s string) Cell { return Cell{Text: s} }

func (c Cell) width() int { return utf8.RuneCountInString(c.Text) + utf8.RuneCountInString(c.Rest) }

// WriteTable writes rows as columns two spaces apart, each as wide as its
// widest cell, and paints a cell only after its width is counted, so a
// coloured column lines up with the header above it. (text/tabwriter
// counts a colour's escape bytes as width, which shifted every column
// after a painted one on a terminal.) No line ends in spaces: the last
// column is not padded, and a row whose last cells are empty stops at its
// last text.
func WriteTable(w io.Writer, paint Painter, rows [][]Cell) error {
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
		var line strings.Builder
		for i, c := range r {
			line.WriteString(paint.Paint(c.Color, c.Text) + c.Rest)
			if i < len(r)-1 {
				line.WriteString(strings.Repeat(" ", widths[i]-c.width()+2))
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
