package term

import "testing"

func TestPrintableEscapesWhatATerminalWouldNotShowAsItself(t *testing.T) {
	for in, want := range map[string]string{
		"add-node-08":           "add-node-08",
		"zürich-1 ✓":            "zürich-1 ✓",
		"add-node-\u202e80":     `add-node-\u202e80`,
		"a\u200bb\u200dc\ufeff": `a\u200bb\u200dc\ufeff`,
		"nul\x00":               `nul\x00`,
		"\x1b[2Jcleared":        `\x1b[2Jcleared`,
		"tab\tand\nline":        `tab\x09and\x0aline`,
		"bad\xffbyte":           `bad\xffbyte`,
		"c1\u0085":              `c1\u0085`,
		"iso\u2066late\u2069":   `iso\u2066late\u2069`,
		"sep\u2028":             `sep\u2028`,
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSanitizeKeepsLinesTabsAndOnlyOurOwnColours(t *testing.T) {
	paint := Painter{enabled: true}
	text := paint.Paint(Red, "DRIFT") + "\tnode_\u202e05\n" + "\x1b[8mhidden\x1b[0m\x1b]0;title\x07"
	if got, want := Sanitize(text, true), "\x1b[31mDRIFT\x1b[0m\tnode_\\u202e05\n\\x1b[8mhidden\x1b[0m\\x1b]0;title\\x07"; got != want {
		t.Errorf("with colour:\n got %q\nwant %q", got, want)
	}
	if got, want := Sanitize(text, false), "\\x1b[31mDRIFT\\x1b[0m\tnode_\\u202e05\n\\x1b[8mhidden\\x1b[0m\\x1b]0;title\\x07"; got != want {
		t.Errorf("without colour:\n got %q\nwant %q", got, want)
	}
	if s := "plain text\n"; Sanitize(s, false) != s {
		t.Error("plain text changed")
	}
}
