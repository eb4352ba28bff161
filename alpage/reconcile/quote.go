package reconcile

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// longQuoted is how long two strings are before a difference between them
// is pointed at, not only shown.
const longQuoted = 24

// declaredLive is `declared="a" live="b"`, each side quoted so that a
// trailing space, a no-break space or an accent shows (strconv.Quote
// escapes what does not print); when both are long it adds where they
// first differ: ` (first difference at character 18: "ü" vs "u")`.
func declaredLive(declared, live string) string {
	out := fmt.Sprintf("declared=%s live=%s", strconv.Quote(declared), strconv.Quote(live))
	if utf8.RuneCountInString(declared) < longQuoted || utf8.RuneCountInString(live) < longQuoted {
		return out
	}
	d, l := []rune(declared), []rune(live)
	i := 0
	for i < len(d) && i < len(l) && d[i] == l[i] {
		i++
	}
	at := func(r []rune) string {
		if i >= len(r) {
			return "(end)"
		}
		return strconv.QuoteRune(r[i])
	}
	return out + fmt.Sprintf(" (first difference at character %d: %s vs %s)", i+1, at(d), at(l))
}
