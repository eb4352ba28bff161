// Package suggest finds the known name a mistyped one was most likely meant
// to be, for the "did you mean memoryMib?" of a validator.
package suggest

import (
	"strings"
	"unicode/utf8"
)

// Nearest returns the candidate closest to typed, compared without regard
// to case, and whether one is close enough to suggest: within an edit
// distance of 2, or a third of typed's length when that is more
// (memoryMB → memoryMib, healthcheck → healthCheck), or one that starts
// with what was typed (vcpu → vcpuCount), or what was typed starts with
// (state_directory → state_dir). The distance is Levenshtein's and
// the rule is cobra's for mistyped commands, widened for long names. Ties
// go to the earlier candidate, so the result does not depend on map order
// when candidates are given in a fixed order.
func Nearest(typed string, candidates []string) (string, bool) {
	lower := strings.ToLower(typed)
	limit := max(2, utf8.RuneCountInString(typed)/3)
	best, bestDist := "", -1
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := distance(lower, lc)
		prefix := len(lower) >= 3 && strings.HasPrefix(lc, lower) || len(lc) >= 4 && strings.HasPrefix(lower, lc)
		if d > limit && !prefix {
			continue
		}
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	return best, bestDist >= 0
}

// distance is the Levenshtein distance between a and b, in runes.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
