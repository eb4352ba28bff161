// Package term decides whether output may be coloured and paints it. Colour
// is used only when the output is a terminal and NO_COLOR is unset
// (https://no-color.org), so piped output and CI logs stay plain.
package term

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Color is an ANSI colour.
type Color string

// The colours status words use.
const (
	None   Color = ""
	Red    Color = "\x1b[31m"
	Green  Color = "\x1b[32m"
	Yellow Color = "\x1b[33m"
	Blue   Color = "\x1b[34m"
	Dim    Color = "\x1b[2m"
	Bold   Color = "\x1b[1m"
)

const reset = "\x1b[0m"

// Painter paints strings when colour is enabled.
type Painter struct{ enabled bool }

// For returns the painter for w: colour only if w is a terminal and
// NO_COLOR is not set.
func For(w io.Writer) Painter {
	return Painter{enabled: os.Getenv("NO_COLOR") == "" && IsTerminal(w)}
}

// Always paints, whatever the output is (tests of painted output).
func Always() Painter { return Painter{enabled: true} }

// Plain never paints.
func Plain() Painter { return Painter{} }

// Enabled reports whether p paints.
func (p Painter) Enabled() bool { return p.enabled }

// Paint wraps s in c when enabled.
func (p Painter) Paint(c Color, s string) string {
	if !p.enabled || c == None {
		return s
	}
	return string(c) + s + reset
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
