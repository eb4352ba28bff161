package generate

import (
	"slices"

	"alpnib.dev/alpage/kinds"
)

// short is a principal as generated titles name it.
func short(id string) string { return kinds.Short(id) }

// sortedCopy is s sorted, each once.
func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}
